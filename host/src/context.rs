//! The context: a backend, its loaded kernels, memory and launches.

use crate::backend::BackendKind;
use crate::backend::cuda::{Cuda, MappedHost};
use crate::backend::emu::{EmuAlloc, EmuConfig, Emulator};
pub(crate) use crate::buffer::Alloc;
use crate::buffer::{DeviceBuffer, DeviceInput, DeviceOutput, DeviceRepr, DeviceSliceMut, Domain};
use crate::error::{CudaContext as _, Error, Result};
use crate::kernel::{Family, Index, Instance, add_to_index};
use crate::single_pass::Halves;
use crate::user::UserKernels;
use cudarc::driver::CudaStream;
use gpuprim_kernels::{Arg, HostKernel, ParamKind};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

/// Grid, block and dynamic shared memory of a launch (one-dimensional).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in the grid (1 ..= 2^31 - 1).
    pub grid: u32,
    /// Threads per block; must equal the kernel's instantiated block size.
    pub block: u32,
    /// Bytes of dynamic shared memory per block (at most
    /// [`MAX_SHARED_BYTES`], 64 KiB; past 48 KiB the launch opts the
    /// kernel in, which every GPU from sm_70 on allows).
    pub shared_bytes: u32,
}

/// Largest dynamic shared memory a launch may ask for: 64 KiB, which
/// every GPU from sm_70 on gives a block that opts in past the 48 KiB
/// default (a launch does so for you).
pub const MAX_SHARED_BYTES: u32 = 64 * 1024;

pub(crate) enum Backend {
    Cuda(Box<Cuda>),
    Emu(Emulator),
}

/// One device (or emulator) with the library's kernels: shared by every
/// [`Context`] cloned from, or put on another stream of, the same one.
pub(crate) struct Inner {
    pub(crate) backend: Backend,
    kernels: HashMap<&'static str, &'static HostKernel>,
    /// Kernels crates of the user's, loaded with [`Context::load_kernels`].
    user: RwLock<UserTable>,
}

impl Inner {
    pub(crate) fn domain(&self) -> Domain {
        match &self.backend {
            Backend::Cuda(c) => Domain::Cuda(c.domain()),
            Backend::Emu(e) => Domain::Emu(e.id()),
        }
    }

    /// Allocate `bytes`; the emulator's memory comes back as its owner.
    pub(crate) fn alloc_raw(&self, bytes: usize) -> Result<(u64, Option<EmuAlloc>)> {
        match &self.backend {
            Backend::Cuda(c) => Ok((c.alloc(bytes)?, None)),
            Backend::Emu(e) => {
                let a = e.alloc(bytes).map_err(|reason| Error::OutOfMemory { bytes, reason })?;
                Ok((a.addr(), Some(a)))
            }
        }
    }

    pub(crate) fn free_raw(&self, addr: u64, emu: Option<EmuAlloc>) {
        match (&self.backend, emu) {
            (Backend::Cuda(c), _) => c.free(addr),
            (Backend::Emu(e), Some(a)) => e.free(&a),
            (Backend::Emu(_), None) => {}
        }
    }
}

/// What one stream of a context owns: the stream, and the temporary
/// storage the simple calls reuse (stream-ordered, so one per stream).
pub(crate) struct StreamState {
    /// Layout: the reductions' "last block" counter sits in the first 256
    /// bytes and is zero between calls; everything after is free for each
    /// call to use (reduction partials, scan status), with no contents
    /// promised. Declared before `cuda` so it is freed first.
    scratch: Mutex<Option<(Alloc, ())>>,
    /// The single-pass launches' double-buffered status storage
    /// ([`crate::single_pass`]), touched by nothing else.
    status: Mutex<Option<(Alloc, Halves)>>,
    /// Where reductions returned to the host write their result (CUDA only):
    /// mapped host memory, so reading it back needs no copy.
    result: Mutex<Option<MappedHost>>,
    cuda: Option<Arc<CudaStream>>,
}

impl StreamState {
    /// A stream (none on the emulator) with no scratch storage yet.
    fn new(cuda: Option<Arc<CudaStream>>) -> Arc<Self> {
        Arc::new(StreamState {
            scratch: Default::default(),
            status: Default::default(),
            result: Default::default(),
            cuda,
        })
    }
}

/// Run `f` on a stream's storage in `slot` (an allocation and what is known
/// of its contents), of at least `bytes`: reused across calls, replaced by
/// a zeroed one of the next power of two from `min` bytes up (with `fresh`
/// state) when too small, and forgotten when `f` fails.
fn with_store<S, R>(
    ctx: &Context,
    slot: &Mutex<Option<(Alloc, S)>>,
    bytes: usize,
    min: usize,
    what: &'static str,
    fresh: impl FnOnce() -> S,
    f: impl FnOnce(&Alloc, &mut S) -> Result<R>,
) -> Result<R> {
    let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
    if !matches!(&*guard, Some((a, _)) if a.bytes() >= bytes) {
        *guard = None;
        let size = bytes.max(min).checked_next_power_of_two().ok_or(Error::TooLarge {
            what,
            len: bytes as u64,
            max: isize::MAX as u64,
        })?;
        let a = Alloc::new(&ctx.inner, size)?;
        ctx.fill_bytes(a.addr(), 0, size)?;
        *guard = Some((a, fresh()));
    }
    let result = match &mut *guard {
        Some((a, state)) => f(a, state),
        None => Err(Error::OutOfMemory { bytes, reason: "storage missing".into() }),
    };
    if result.is_err() {
        *guard = None;
    }
    result
}

/// The entry point: a backend (a CUDA device or the CPU emulator) with the
/// library's kernels, and a stream that operations queue their work on.
///
/// Clones share the device and the stream, and may be used from any
/// thread: every call binds the device's context to the calling thread
/// first. [`Context::with_stream`] and [`Context::fork`] give contexts on
/// other streams of the same device, sharing its loaded kernels.
///
/// ```
/// # fn main() -> gpuprim::Result<()> {
/// let ctx = gpuprim::Context::emulator();
/// assert_eq!(ctx.backend(), gpuprim::BackendKind::Emulator);
/// let v = ctx.upload(&[1i32, 2, 3])?;
/// assert_eq!(ctx.sum(&v)?, 6);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Context {
    pub(crate) inner: Arc<Inner>,
    stream: Arc<StreamState>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Context({}: {})", self.backend(), self.device_name())
    }
}

fn kernel_table() -> HashMap<&'static str, &'static HostKernel> {
    gpuprim_kernels::host_kernels().iter().map(|k| (k.name, k)).collect()
}

/// The kernels crates loaded into one device's contexts.
#[derive(Default)]
pub(crate) struct UserTable {
    /// The crates, with the key of their module on CUDA.
    crates: Vec<(UserKernels, String)>,
    /// Entry name -> its kernel and the index of its crate.
    by_name: HashMap<&'static str, (&'static HostKernel, usize)>,
    /// As the shipped kernels' index ([`crate::kernel`]).
    index: Index,
}

/// An event on a context's stream: record it after some work, and make
/// another stream (or your own CUDA code, through [`Event::as_cudarc`])
/// wait for it. On the emulator, whose work is done by the time a call
/// returns, events are already complete.
pub struct Event {
    cuda: Option<cudarc::driver::CudaEvent>,
}

impl Event {
    /// The cudarc event, on CUDA.
    pub fn as_cudarc(&self) -> Option<&cudarc::driver::CudaEvent> {
        self.cuda.as_ref()
    }
    /// Wait on the host until the recorded work is done.
    pub fn synchronize(&self) -> Result<()> {
        match &self.cuda {
            Some(e) => e.synchronize().during("cuEventSynchronize"),
            None => Ok(()),
        }
    }
    /// GPU milliseconds from this event to `end` (both from
    /// [`Context::record_timed_event`]), once `end` is reached: `None` on
    /// the emulator, which keeps no GPU time.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// let x = ctx.upload(&vec![1.0f32; 1 << 16]).unwrap();
    /// let start = ctx.record_timed_event().unwrap();
    /// let mut out = ctx.alloc::<f32>(1).unwrap();
    /// ctx.sum_into(&x, &mut out).unwrap();
    /// let end = ctx.record_timed_event().unwrap();
    /// if let Some(ms) = start.elapsed_ms(&end).unwrap() {
    ///     println!("sum of 2^16 f32: {:.1} us", ms * 1e3);
    /// }
    /// ```
    pub fn elapsed_ms(&self, end: &Event) -> Result<Option<f32>> {
        match (&self.cuda, &end.cuda) {
            (Some(a), Some(b)) => a.elapsed_ms(b).during("cuEventElapsedTime").map(Some),
            _ => Ok(None),
        }
    }
}

impl From<cudarc::driver::CudaEvent> for Event {
    fn from(e: cudarc::driver::CudaEvent) -> Self {
        Event { cuda: Some(e) }
    }
}

impl Context {
    /// CUDA device 0 when an NVIDIA driver and a device are present, the
    /// CPU emulator otherwise. Only the absence of a driver or of a device
    /// leads to the emulator: any other failure (an unsupported GPU, a
    /// driver error) is returned. Set `GPUPRIM_BACKEND=emu` (or `cuda`) to
    /// choose.
    pub fn new() -> Result<Self> {
        match std::env::var("GPUPRIM_BACKEND").as_deref() {
            Ok("emu") | Ok("emulator") => Ok(Self::emulator()),
            Ok("cuda") => Self::cuda(),
            _ => match Self::cuda() {
                Err(Error::NoCuda { .. }) => Ok(Self::emulator()),
                other => other,
            },
        }
    }

    /// The CUDA backend on device 0, or why it cannot be had.
    pub fn cuda() -> Result<Self> {
        Self::cuda_device(0)
    }

    /// The CUDA backend on device `ordinal` (its primary context, which the
    /// CUDA runtime and cudarc share), on a new stream of its own.
    pub fn cuda_device(ordinal: usize) -> Result<Self> {
        Self::from_cuda(Cuda::new(ordinal)?, None)
    }

    /// How many CUDA devices there are: 0 without a driver.
    pub fn device_count() -> usize {
        crate::backend::cuda::device_count().unwrap_or(0)
    }

    /// A context that queues its work on `stream`, a cudarc stream of your
    /// own, so that gpuprim's operations and your kernels are ordered on one
    /// stream.
    pub fn from_cudarc_stream(stream: Arc<CudaStream>) -> Result<Self> {
        let cuda = Cuda::from_context(stream.context().clone())?;
        Self::from_cuda(cuda, Some(stream))
    }

    fn from_cuda(cuda: Cuda, stream: Option<Arc<CudaStream>>) -> Result<Self> {
        let stream = match stream {
            Some(s) => s,
            None => cuda.new_stream()?,
        };
        Ok(Context {
            inner: Arc::new(Inner {
                backend: Backend::Cuda(Box::new(cuda)),
                kernels: kernel_table(),
                user: Default::default(),
            }),
            stream: StreamState::new(Some(stream)),
        })
    }

    /// The same device (and its loaded kernels) on another stream: `stream`
    /// must belong to this context's device. On the emulator it returns a
    /// plain clone.
    pub fn with_stream(&self, stream: Arc<CudaStream>) -> Result<Self> {
        if let Backend::Cuda(c) = &self.inner.backend
            && stream.context().cu_ctx() as u64 != c.domain()
        {
            return Err(Error::ForeignMemory {
                what: "stream",
                owner: Domain::Cuda(stream.context().cu_ctx() as u64).to_string(),
                here: self.domain().to_string(),
            });
        }
        if self.backend() == BackendKind::Emulator {
            return Ok(self.clone());
        }
        Ok(Context { inner: self.inner.clone(), stream: StreamState::new(Some(stream)) })
    }

    /// The same device on a new stream of its own (for concurrent work).
    ///
    /// Work on the two streams is not ordered: before one context reads
    /// what the other's calls write (a download, a launch that takes it
    /// as input), wait for the writer with
    /// [`synchronize`](Context::synchronize).
    pub fn fork(&self) -> Result<Self> {
        match &self.inner.backend {
            Backend::Cuda(c) => self.with_stream(c.new_stream()?),
            Backend::Emu(_) => Ok(Context { inner: self.inner.clone(), stream: StreamState::new(None) }),
        }
    }

    /// The CPU emulator with default settings.
    pub fn emulator() -> Self {
        Self::emulator_with(EmuConfig::default())
    }

    /// The CPU emulator with the given settings (seed, resident blocks ...).
    pub fn emulator_with(config: EmuConfig) -> Self {
        Context {
            inner: Arc::new(Inner {
                backend: Backend::Emu(Emulator::new(config)),
                kernels: kernel_table(),
                user: Default::default(),
            }),
            stream: StreamState::new(None),
        }
    }

    /// Which backend this context runs on.
    pub fn backend(&self) -> BackendKind {
        match self.inner.backend {
            Backend::Cuda(_) => BackendKind::Cuda,
            Backend::Emu(_) => BackendKind::Emulator,
        }
    }

    /// The GPU's name, or `"CPU emulator"`.
    pub fn device_name(&self) -> String {
        match &self.inner.backend {
            Backend::Cuda(c) => c.device_name(),
            Backend::Emu(_) => "CPU emulator".into(),
        }
    }

    /// The GPU's compute capability (`(9, 0)` on an H100/H200); `None` on
    /// the emulator.
    pub fn compute_capability(&self) -> Option<(i32, i32)> {
        match &self.inner.backend {
            Backend::Cuda(c) => Some(c.compute_capability()),
            Backend::Emu(_) => None,
        }
    }

    /// Whether kernels load as shipped machine code for this GPU (`true`
    /// on compute capability 8.x and 9.0) rather than as PTX the driver
    /// compiles on first use. `false` on the emulator.
    pub fn has_machine_code(&self) -> bool {
        matches!(&self.inner.backend, Backend::Cuda(c) if c.image() != crate::artifact::Image::Ptx)
    }

    /// Streaming multiprocessors (the emulator reports its resident blocks).
    pub fn multiprocessors(&self) -> u32 {
        match &self.inner.backend {
            Backend::Cuda(c) => c.multiprocessors(),
            Backend::Emu(e) => e.config().resident_blocks.max(1),
        }
    }

    /// The cudarc context of the device, on CUDA.
    pub fn cudarc_context(&self) -> Option<&Arc<cudarc::driver::CudaContext>> {
        match &self.inner.backend {
            Backend::Cuda(c) => Some(c.context()),
            Backend::Emu(_) => None,
        }
    }

    /// The stream this context queues its work on, on CUDA.
    pub fn cudarc_stream(&self) -> Option<&Arc<CudaStream>> {
        self.stream.cuda.as_ref()
    }

    pub(crate) fn cuda_stream(&self) -> Option<&CudaStream> {
        self.stream.cuda.as_deref()
    }

    pub(crate) fn domain(&self) -> Domain {
        self.inner.domain()
    }

    /// Memory of `domain` may be used here, or `ForeignMemory`.
    pub(crate) fn check_domain(&self, domain: Domain, what: &'static str) -> Result<()> {
        let here = self.domain();
        if domain == here {
            Ok(())
        } else {
            Err(Error::ForeignMemory { what, owner: domain.to_string(), here: here.to_string() })
        }
    }

    /// `addr .. addr + bytes` lies in one live allocation of this device.
    pub(crate) fn check_device_range(&self, addr: u64, bytes: usize) -> Result<()> {
        let what = "raw device view";
        let (start, len) = match &self.inner.backend {
            Backend::Cuda(c) => c.address_range(addr).map_err(|_| Error::ForeignMemory {
                what,
                owner: format!("address {addr:#x}, which is no device allocation of this context"),
                here: self.domain().to_string(),
            })?,
            Backend::Emu(e) => e.allocation_of(addr, 1).ok_or_else(|| Error::ForeignMemory {
                what,
                owner: format!("address {addr:#x}, which is no allocation of this emulator"),
                here: self.domain().to_string(),
            })?,
        };
        let offset = (addr - start) as usize;
        if offset.checked_add(bytes).is_none_or(|end| end > len) {
            return Err(Error::OutOfRange {
                what: "raw device view (bytes)",
                start: offset,
                end: offset.saturating_add(bytes),
                len,
            });
        }
        Ok(())
    }

    /// Record an event after the work queued so far on this stream.
    pub fn record_event(&self) -> Result<Event> {
        // cudarc's default: no timing.
        self.record_with(None)
    }

    /// Record an event that keeps GPU time, for
    /// [`Event::elapsed_ms`] (timing costs a little: plain
    /// [`record_event`](Context::record_event) for ordering).
    pub fn record_timed_event(&self) -> Result<Event> {
        self.record_with(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
    }

    /// An event with these flags (cudarc's default for `None`), recorded
    /// on this stream; no event on the emulator.
    fn record_with(&self, flags: Option<cudarc::driver::sys::CUevent_flags>) -> Result<Event> {
        match (&self.inner.backend, self.cuda_stream()) {
            (Backend::Cuda(c), Some(s)) => {
                c.bind()?;
                let e = c.context().new_event(flags).during("cuEventCreate")?;
                e.record(s).during("cuEventRecord")?;
                Ok(Event { cuda: Some(e) })
            }
            _ => Ok(Event { cuda: None }),
        }
    }

    /// Make the work queued after this call wait for `event` (recorded on
    /// any stream of the same device, by gpuprim or by your code).
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        match (&self.inner.backend, self.cuda_stream(), &event.cuda) {
            (Backend::Cuda(c), Some(s), Some(e)) => {
                c.bind()?;
                s.wait(e).during("cuStreamWaitEvent")
            }
            _ => Ok(()),
        }
    }

    /// A buffer of `len` elements whose contents are unspecified.
    pub fn alloc<T: DeviceRepr>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        DeviceBuffer::new(self, len)
    }

    /// A buffer holding a copy of `data`.
    pub fn upload<T: DeviceRepr>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        let mut b = self.alloc(data.len())?;
        b.copy_from_host(data)?;
        Ok(b)
    }

    /// Stream-ordered copy between device memory of equal length.
    pub fn copy<T: DeviceRepr>(&self, src: &impl DeviceInput<T>, dst: &mut impl DeviceOutput<T>) -> Result<()> {
        let src = src.input(self)?;
        let dst = dst.output(self)?;
        if src.view.len() != dst.view.len() {
            return Err(Error::LengthMismatch {
                what: "copy destination",
                expected: src.view.len(),
                got: dst.view.len(),
            });
        }
        let bytes = src.view.len() * std::mem::size_of::<T>();
        match (&self.inner.backend, self.cuda_stream()) {
            (Backend::Cuda(c), Some(s)) => c.copy(s, dst.view.addr(), src.view.addr(), bytes),
            _ => {
                // SAFETY: both views were checked to lie in live emulator
                // allocations of `bytes` each; `copy` allows overlap.
                unsafe { std::ptr::copy(src.view.addr() as *const u8, dst.view.addr() as *mut u8, bytes) };
                Ok(())
            }
        }
    }

    /// Copy `src` to device address `dst` (a checked range of this device).
    pub(crate) fn upload_bytes(&self, dst: u64, src: &[u8]) -> Result<()> {
        match (&self.inner.backend, self.cuda_stream()) {
            (Backend::Cuda(c), Some(s)) => c.upload(s, dst, src),
            _ => self.emu_bytes(dst, src.len()).map(|d| d.copy_from_slice(src)),
        }
    }

    /// Copy from device address `src` into `dst` after the queued work.
    pub(crate) fn download_bytes(&self, src: u64, dst: &mut [u8]) -> Result<()> {
        match (&self.inner.backend, self.cuda_stream()) {
            (Backend::Cuda(c), Some(s)) => c.download(s, dst, src),
            _ => self.emu_bytes(src, dst.len()).map(|s| dst.copy_from_slice(s)),
        }
    }

    /// Stream-ordered fill of `bytes` bytes at `dst` with `value`.
    pub(crate) fn fill_bytes(&self, dst: u64, value: u8, bytes: usize) -> Result<()> {
        match (&self.inner.backend, self.cuda_stream()) {
            (Backend::Cuda(c), Some(s)) => {
                if dst.is_multiple_of(4) && bytes.is_multiple_of(4) {
                    c.fill_u32(s, dst, u32::from_ne_bytes([value; 4]), bytes / 4)
                } else {
                    c.fill_u8(s, dst, value, bytes)
                }
            }
            _ => self.emu_bytes(dst, bytes).map(|d| d.fill(value)),
        }
    }

    /// Emulator memory at `addr` as bytes, checked to lie in an allocation.
    #[allow(clippy::mut_from_ref)]
    fn emu_bytes(&self, addr: u64, bytes: usize) -> Result<&mut [u8]> {
        if bytes == 0 {
            return Ok(&mut []);
        }
        match &self.inner.backend {
            Backend::Emu(e) if e.allocation_of(addr, bytes).is_some() => {
                // SAFETY: inside a live allocation of this emulator (just
                // checked); the emulator runs no kernel concurrently with
                // the host's use of a slice it returned (launches complete
                // before `launch` returns).
                Ok(unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, bytes) })
            }
            _ => Err(Error::OutOfRange {
                what: "emulator memory",
                start: addr as usize,
                end: addr as usize + bytes,
                len: 0,
            }),
        }
    }

    /// Run `f`, which queues work that writes one `T` into the output it is
    /// given, then wait for this stream and return that value. On CUDA the
    /// output is page-locked host memory mapped into the device, kept per
    /// stream: the kernel's store reaches the host directly, so there is no
    /// allocation, no free and no copy per call. `None` on the emulator
    /// (and for more than 64 bytes): the caller reads back its own way.
    pub(crate) fn read_back<T: DeviceRepr>(
        &self,
        f: impl FnOnce(DeviceSliceMut<'_, T>) -> Result<()>,
    ) -> Result<Option<T>> {
        const SLOT: usize = 64;
        let (Backend::Cuda(c), Some(stream)) = (&self.inner.backend, self.cuda_stream()) else { return Ok(None) };
        if std::mem::size_of::<T>() > SLOT {
            return Ok(None);
        }
        let mut guard = self.stream.result.lock().unwrap_or_else(|e| e.into_inner());
        let slot = match guard.take() {
            Some(m) => m,
            None => {
                c.bind()?;
                MappedHost::new(SLOT)?
            }
        };
        let slot = &*guard.insert(slot);
        // Poisoned, so that a kernel that wrote nothing is not read as a
        // plausible result. No kernel uses the slot now: each call waits
        // for its own work before it returns.
        slot.fill(0xff);
        // SAFETY: `SLOT` bytes of device-accessible memory, 64-byte aligned
        // (page-aligned), owned by this stream and serialised by its mutex.
        let view = unsafe { DeviceSliceMut::from_parts(slot.device_addr(), 1, self.domain()) };
        debug_assert!(slot.bytes() >= std::mem::size_of::<T>());
        let queued = f(view);
        // Wait even after an error: work already queued may still write.
        let waited = c.synchronize(stream);
        queued?;
        waited?;
        Ok(Some(slot.read::<T>()))
    }

    /// Run `f` on this stream's single-pass status storage, whose two
    /// halves hold at least `used` bytes each: `f(base, half, halves)`.
    /// Grown (and zeroed) when too small; forgotten when `f` fails.
    pub(crate) fn with_status_store<R>(
        &self,
        used: usize,
        f: impl FnOnce(u64, usize, &mut Halves) -> Result<R>,
    ) -> Result<R> {
        let bytes = used.checked_mul(2).ok_or(Error::TooLarge {
            what: "scan status storage (bytes)",
            len: used as u64,
            max: isize::MAX as u64 / 2,
        })?;
        // Halves of at least 16 KiB, so that growing is rare.
        with_store(
            self,
            &self.stream.status,
            bytes,
            32 << 10,
            "scan status storage (bytes)",
            Halves::zeroed,
            |a, halves| f(a.addr(), a.bytes() / 2, halves),
        )
    }

    /// Run `f` with at least `bytes` of zero-initialised temporary storage
    /// whose 16-byte counter area `f` leaves zero when it succeeds; reused
    /// across calls on this stream, replaced when too small or when `f`
    /// fails.
    pub(crate) fn with_scratch<R>(&self, bytes: usize, f: impl FnOnce(&Alloc) -> Result<R>) -> Result<R> {
        with_store(self, &self.stream.scratch, bytes, 64 << 10, "temporary storage (bytes)", || (), |a, ()| f(a))
    }

    /// Wait until all work queued on this context's stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        match (&self.inner.backend, self.cuda_stream()) {
            (Backend::Cuda(c), Some(s)) => c.synchronize(s),
            _ => Ok(()),
        }
    }

    /// Run `f` and return its result with the device time of the work it
    /// queued: CUDA events on the GPU, wall-clock time on the emulator.
    /// On the GPU this includes the host's submission of each launch; see
    /// [`time_held`](Context::time_held) for the GPU's execution alone.
    pub fn time<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<(R, Duration)> {
        match (&self.inner.backend, self.cuda_stream()) {
            (Backend::Cuda(c), Some(s)) => c.time(s, f),
            _ => {
                let t = std::time::Instant::now();
                let r = f()?;
                Ok((r, t.elapsed()))
            }
        }
    }

    /// Run `f` and return its result with the GPU time of the work it
    /// queued, leaving out the host's cost of submitting it.
    ///
    /// [`time`](Context::time) records the start event on an idle stream, so
    /// the GPU stamps it at once and then waits for the host to submit each
    /// launch: its interval includes that submission, which is what a caller
    /// waiting for one call sees (a trivial kernel measures several µs).
    /// `time_held` first queues a tiny kernel that holds the stream, then the
    /// start event, `f`'s work and the stop event behind it, and only then
    /// lets the kernel finish, as NVIDIA's nvbench does with its "blocking
    /// kernel". The events then bracket GPU execution alone; the gaps
    /// between launches on the GPU side are still counted.
    ///
    /// `f` must only queue work: anything that waits for the GPU (a
    /// download, a result returned to the host such as [`sum`](Context::sum),
    /// [`synchronize`](Context::synchronize), an allocation or a free that
    /// synchronises) waits behind the held stream. The hold kernel gives up
    /// after 200 ms, and the call returns [`Error::HoldTimedOut`] instead
    /// of a time. Kernels are loaded on first use, and loading waits for the
    /// GPU: run a call once before timing it held. On the emulator this is
    /// the same as [`time`](Context::time).
    ///
    /// ```
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::emulator();
    /// let input = ctx.upload(&[1.0f32; 4096])?;
    /// let mut total = ctx.alloc::<f32>(1)?;
    /// // `sum_into` leaves its result on the device: it only queues work.
    /// let ((), gpu_time) = ctx.time_held(|| ctx.sum_into(&input, &mut total))?;
    /// assert!(gpu_time > std::time::Duration::ZERO);
    /// assert_eq!(total.to_vec()?, [4096.0]);
    /// # Ok(()) }
    /// ```
    pub fn time_held<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<(R, Duration)> {
        match (&self.inner.backend, self.cuda_stream()) {
            (Backend::Cuda(c), Some(s)) => c.time_held(s, f),
            _ => self.time(f),
        }
    }

    /// Load every shipped kernel module now, instead of each on first use;
    /// returns how many were loaded. For measuring what loading costs, or to
    /// move it out of a latency-critical first call.
    pub fn preload_kernels(&self) -> Result<usize> {
        match &self.inner.backend {
            Backend::Cuda(c) => c.preload_all(),
            Backend::Emu(_) => Ok(0),
        }
    }

    /// Make the PTX modules of a kernel container (as `cargo xtask
    /// artifact` writes them) loadable on CUDA, for kernels outside the
    /// shipped set. Their host-side entries must be in the kernel table.
    #[doc(hidden)]
    pub fn register_ptx_container(&self, file: &'static str, compressed: &'static [u8]) -> Result<()> {
        // Decoded once per container and kept for the process: every
        // context that registers the same bytes shares it.
        type Decoded = HashMap<usize, &'static crate::artifact::Archive>;
        static DECODED: Mutex<Option<Decoded>> = Mutex::new(None);
        if let Backend::Cuda(c) = &self.inner.backend {
            let mut decoded = DECODED.lock().unwrap_or_else(|e| e.into_inner());
            let archive = match decoded.get_or_insert_default().get(&(compressed.as_ptr() as usize)) {
                Some(&a) => a,
                None => {
                    let a: &'static crate::artifact::Archive =
                        Box::leak(Box::new(crate::artifact::Archive::decode(file, compressed)?));
                    decoded.get_or_insert_default().insert(compressed.as_ptr() as usize, a);
                    a
                }
            };
            c.register(archive);
        }
        Ok(())
    }

    /// Make the kernels of a kernels crate of yours available to this
    /// context and every context sharing its device (clones,
    /// [`with_stream`](Context::with_stream), [`fork`](Context::fork)):
    /// the operator-generic calls ([`reduce_by`](crate::reduce::Reducer::reduce_by),
    /// [`inclusive_scan_by`](Context::inclusive_scan_by), ...) and
    /// [`launch`](Context::launch) find them after the shipped ones. See
    /// [`gpuprim::user`](crate::user) for the whole flow.
    ///
    /// On CUDA the PTX is compiled by the driver here, once per device
    /// (milliseconds to seconds, by its size), so that a PTX the driver
    /// refuses is an error now rather than at the first launch. Loading a
    /// crate again does nothing.
    ///
    /// Errors ([`Error::UserKernels`]): the crate lists no kernels, a
    /// kernel it lists is not in its PTX (the PTX and the linked crate come
    /// from different sources), a kernel name the library or another
    /// loaded crate already uses, PTX the driver refuses (for an older GPU
    /// than its `sm_` target, say).
    ///
    /// ```ignore
    /// let ctx = gpuprim::Context::new()?;
    /// ctx.load_kernels(&gpuprim::user_kernels!(my_kernels))?;
    /// let x = ctx.upload(&[3, -7, 5])?;
    /// assert_eq!(ctx.reduce_by::<i32, my_kernels::MaxAbs>(&x)?, -7);
    /// ```
    pub fn load_kernels(&self, kernels: &UserKernels) -> Result<()> {
        let listed = kernels.host_kernels();
        let module = format!("user:{}@{:x}", kernels.name(), kernels.ptx().as_ptr() as usize);
        let mut table = self.inner.user.write().unwrap_or_else(|e| e.into_inner());
        if table.crates.iter().any(|(_, m)| *m == module) {
            return Ok(());
        }
        kernels.check_entries(listed)?;
        let mut clashes = vec![];
        for k in listed {
            if self.inner.kernels.contains_key(k.name) {
                clashes.push(format!("{} (shipped)", k.name));
            } else if let Some((_, i)) = table.by_name.get(k.name) {
                clashes.push(format!("{} (of `{}`)", k.name, table.crates[*i].0.name()));
            }
        }
        if !clashes.is_empty() {
            clashes.truncate(4);
            return Err(kernels.error(format!(
                "kernel names already in use: {}; give your operators and types names of their own \
                 (Named::NAME, and the names in `entries!`)",
                clashes.join(", ")
            )));
        }
        if let Backend::Cuda(c) = &self.inner.backend {
            c.load_user(&module, kernels.ptx())
                .map_err(|e| kernels.error(format!("the driver refused its PTX: {e}")))?;
        }
        let i = table.crates.len();
        table.crates.push((*kernels, module));
        table.by_name.extend(listed.iter().map(|k| (k.name, (k, i))));
        add_to_index(&mut table.index, listed);
        Ok(())
    }

    /// Run `f` on the index of the loaded kernels crates' kernels.
    pub(crate) fn with_user_index<R>(&self, f: impl FnOnce(&Index) -> R) -> R {
        f(&self.inner.user.read().unwrap_or_else(|e| e.into_inner()).index)
    }

    /// The kernel named `name` and, for a loaded crate's, its module key.
    fn find_kernel(&self, name: &str) -> Option<(&'static HostKernel, Option<String>)> {
        if let Some(&k) = self.inner.kernels.get(name) {
            return Some((k, None));
        }
        let table = self.inner.user.read().unwrap_or_else(|e| e.into_inner());
        table.by_name.get(name).map(|&(k, i)| (k, Some(table.crates[i].1.clone())))
    }

    /// Look up a kernel by its entry name: shipped, or of a loaded kernels
    /// crate.
    pub fn kernel(&self, name: &str) -> Result<&'static HostKernel> {
        self.find_kernel(name).map(|(k, _)| k).ok_or_else(|| self.unknown_kernel(name))
    }

    /// The error for a kernel name found nowhere, with similar names.
    fn unknown_kernel(&self, name: &str) -> Error {
        let table = self.inner.user.read().unwrap_or_else(|e| e.into_inner());
        let mut close: Vec<&str> = (self.inner.kernels.keys().copied())
            .chain(table.by_name.keys().copied())
            .filter(|k| k.split('_').take(2).eq(name.split('_').take(2)))
            .collect();
        close.sort_unstable();
        close.truncate(8);
        Error::UnknownKernel {
            name: name.into(),
            hint: if close.is_empty() { String::new() } else { format!("; similar: {}", close.join(", ")) },
        }
    }

    /// Blocks of `block` threads with `shared_bytes` of dynamic shared
    /// memory that one multiprocessor holds at once for kernel `name` (the
    /// driver's occupancy calculator), at least 1; `None` on the emulator,
    /// which has no such limit. Grid-stride kernels size their grids by it
    /// where their registers depend on the type.
    pub(crate) fn resident_blocks(&self, name: &str, block: u32, shared_bytes: u32) -> Result<Option<u32>> {
        let (_, module) = self.find_kernel(name).ok_or_else(|| self.unknown_kernel(name))?;
        match &self.inner.backend {
            Backend::Cuda(c) => c.resident_blocks(name, module.as_deref(), block, shared_bytes).map(Some),
            Backend::Emu(_) => Ok(None),
        }
    }

    /// Launch a kernel by name, checking the arguments against its
    /// parameters and the shape against its block size and the limits.
    /// On the emulator the launch runs to completion before this returns.
    ///
    /// # Safety
    /// Pointer arguments must be addresses of live memory of this context's
    /// device, large enough for everything the kernel reads and writes with
    /// the other arguments.
    pub unsafe fn launch(&self, name: &str, cfg: LaunchConfig, args: &[Arg]) -> Result<()> {
        // SAFETY: forwarded.
        unsafe { self.launch_as(name, cfg, args, false) }
    }

    /// [`Self::launch`] as a dependent launch where the GPU runs the sm_90
    /// machine code (compute capability 9.x, the shipped cubins): it may
    /// start while the launch before it in the stream drains, and its
    /// kernel calls `gpu::grid_dependency_wait` before it reads anything
    /// that launch wrote (the launch before may let it start early with
    /// `gpu::launch_dependents`). Elsewhere (older GPUs, the PTX, the
    /// emulator, or `GPUPRIM_DEPENDENT_LAUNCH=0`) an ordinary launch.
    ///
    /// # Safety
    /// As [`Self::launch`]; and the kernel waits as above.
    pub(crate) unsafe fn launch_dependent(&self, name: &str, cfg: LaunchConfig, args: &[Arg]) -> Result<()> {
        // SAFETY: forwarded.
        unsafe { self.launch_as(name, cfg, args, true) }
    }

    /// # Safety
    /// As [`Self::launch_dependent`] where `dependent`, else as [`Self::launch`].
    unsafe fn launch_as(&self, name: &str, cfg: LaunchConfig, args: &[Arg], dependent: bool) -> Result<()> {
        let (k, module) = self.find_kernel(name).ok_or_else(|| self.unknown_kernel(name))?;
        if !args.iter().map(Arg::kind).eq(k.params.iter().copied()) {
            let kinds: Vec<ParamKind> = args.iter().map(Arg::kind).collect();
            let show = |v: &[ParamKind]| v.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ");
            return Err(Error::BadArguments { kernel: name.into(), expected: show(k.params), got: show(&kinds) });
        }
        let bad = |reason: String| Err(Error::BadLaunch { kernel: name.into(), reason });
        if cfg.block != k.block_size {
            return bad(format!("block of {} threads; this kernel is built for {}", cfg.block, k.block_size));
        }
        if cfg.grid == 0 || cfg.grid > i32::MAX as u32 {
            return bad(format!("grid of {} blocks (must be 1 ..= 2^31-1)", cfg.grid));
        }
        if cfg.shared_bytes > MAX_SHARED_BYTES {
            return bad(format!("{} bytes of shared memory (at most {MAX_SHARED_BYTES})", cfg.shared_bytes));
        }
        match (&self.inner.backend, self.cuda_stream()) {
            (Backend::Cuda(c), Some(s)) => {
                let mut slots = [0u64; 16];
                if args.len() > slots.len() {
                    return bad(format!("{} parameters (at most {})", args.len(), slots.len()));
                }
                for (s, a) in slots.iter_mut().zip(args) {
                    *s = slot(a);
                }
                // SAFETY: argument kinds match the kernel (checked above);
                // pointers are the caller's contract.
                unsafe {
                    c.launch(
                        s,
                        name,
                        module.as_deref(),
                        cfg.grid,
                        cfg.block,
                        cfg.shared_bytes,
                        &mut slots[..args.len()],
                        dependent && c.dependent_launches(),
                    )
                }
            }
            (Backend::Emu(e), _) => e
                .launch(k, cfg.grid, cfg.block, cfg.shared_bytes as usize, args)
                .map_err(|fault| Error::Emulator { kernel: name.into(), fault }),
            (Backend::Cuda(_), None) => bad("no stream".into()),
        }
    }
}

/// A parameter's bytes at the start of a 64-bit slot (little-endian).
fn slot(a: &Arg) -> u64 {
    match *a {
        Arg::Ptr(v) | Arg::U64(v) => v,
        Arg::I64(v) => v as u64,
        Arg::U32(v) => v as u64,
        Arg::I32(v) => v as u32 as u64,
        Arg::F32(v) => v.to_bits() as u64,
        Arg::F64(v) => v.to_bits(),
    }
}

impl Context {
    /// Set the `T` at device address `addr` to `value`, stream-ordered (a
    /// one-thread kernel rather than a copy from the host, which would wait
    /// for the queued work). `T` of at most 16 bytes, a multiple of 4.
    pub(crate) fn set_first_at<T: DeviceRepr>(&self, addr: u64, value: T) -> Result<()> {
        let size = std::mem::size_of::<T>();
        if size > 16 || !size.is_multiple_of(4) {
            return Err(Error::Unsupported {
                what: "set_first".into(),
                reason: format!("needs 4, 8, 12 or 16-byte elements, not {size} bytes"),
            });
        }
        let mut words = [0u64; 2];
        crate::buffer::as_bytes_mut(&mut words)[..size].copy_from_slice(crate::buffer::as_bytes(&[value]));
        // SAFETY: the element at `addr` is `size` bytes, 4-byte aligned.
        unsafe {
            self.launch(
                Family("util_set_words").get(self, Instance::of(""), 32, || "set_first".into())?.name,
                LaunchConfig { grid: 1, block: 32, shared_bytes: 0 },
                &[Arg::Ptr(addr), words[0].into(), words[1].into(), ((size / 4) as u32).into()],
            )
        }
    }

    /// Fill `buf` on the device with `hash_value(i, seed)`: integers
    /// 0 ..= 2000 from a hash of the index (see
    /// `gpuprim_kernels::util::hash_value`, which computes the same on the
    /// host). For test inputs too large to upload quickly.
    pub fn fill_hash<T: crate::Scalar>(&self, buf: &mut impl DeviceOutput<T>, seed: u64) -> Result<()> {
        let out = buf.output(self)?;
        let n = out.view.len();
        if n == 0 {
            return Ok(());
        }
        let grid = (n as u64).div_ceil(256).clamp(1, self.multiprocessors() as u64 * 8) as u32;
        let kernel =
            Family("util_fill_hash").get(self, Instance::of(T::NAME), 256, || format!("fill_hash of {}", T::NAME))?;
        // SAFETY: the view holds n elements, which is what the kernel writes.
        unsafe {
            self.launch(
                kernel.name,
                LaunchConfig { grid, block: 256, shared_bytes: 0 },
                &[out.view.arg(), (n as u64).into(), seed.into()],
            )
        }
    }
}
