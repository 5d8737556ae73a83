//! The context: a backend, its loaded kernels, memory and launches.

use crate::backend::BackendKind;
use crate::backend::cuda::{Cuda, CudaAlloc};
use crate::backend::emu::{EmuAlloc, EmuConfig, Emulator};
use crate::buffer::{DeviceBuffer, DeviceRepr};
use crate::error::{Error, Result};
use gpuprim_kernels::{Arg, HostKernel, ParamKind};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Grid, block and dynamic shared memory of a launch (one-dimensional).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in the grid (1 ..= 2^31 - 1).
    pub grid: u32,
    /// Threads per block; must equal the kernel's instantiated block size.
    pub block: u32,
    /// Bytes of dynamic shared memory per block (at most 48 KiB).
    pub shared_bytes: u32,
}

/// Largest dynamic shared memory a launch may ask for without opting in.
pub const MAX_SHARED_BYTES: u32 = 48 * 1024;

pub(crate) enum Backend {
    Cuda(Box<Cuda>),
    Emu(Emulator),
}

pub(crate) enum Alloc {
    Cuda(CudaAlloc),
    Emu(EmuAlloc),
}

impl Alloc {
    pub(crate) fn addr(&self) -> u64 {
        match self {
            Alloc::Cuda(a) => a.addr(),
            Alloc::Emu(a) => a.addr(),
        }
    }
}

pub(crate) struct Inner {
    /// Temporary storage the simple calls reuse (declared before `backend`
    /// so it is freed while the CUDA context still exists). Layout: the
    /// reductions' "last block" counter sits in the first 256 bytes and is
    /// zero between calls; everything after is free for each call to use
    /// (reduction partials, scan status), with no contents promised.
    scratch: std::sync::Mutex<Option<(Alloc, usize)>>,
    pub(crate) backend: Backend,
    kernels: HashMap<&'static str, &'static HostKernel>,
}

impl Inner {
    /// Run `f` with at least `bytes` of zero-initialised temporary storage
    /// whose 16-byte counter area `f` leaves zero when it succeeds; reused
    /// across calls, replaced when too small or when `f` fails.
    pub(crate) fn with_scratch<R>(&self, bytes: usize, f: impl FnOnce(&Alloc) -> Result<R>) -> Result<R> {
        let mut guard = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let fits = matches!(&*guard, Some((_, have)) if *have >= bytes);
        if !fits {
            if let Some((old, _)) = guard.take() {
                self.free(&old);
            }
            let size = bytes.max(64 * 1024).next_power_of_two();
            let mut a = self.alloc(size)?;
            self.fill_u32(&mut a, 0)?;
            *guard = Some((a, size));
        }
        let result = match &*guard {
            Some((a, _)) => f(a),
            None => Err(Error::OutOfMemory { bytes, reason: "scratch storage missing".into() }),
        };
        if result.is_err()
            && let Some((old, _)) = guard.take()
        {
            self.free(&old);
        }
        result
    }

    pub(crate) fn alloc(&self, bytes: usize) -> Result<Alloc> {
        Ok(match &self.backend {
            Backend::Cuda(c) => Alloc::Cuda(c.alloc(bytes)?),
            Backend::Emu(e) => Alloc::Emu(e.alloc(bytes)),
        })
    }
    pub(crate) fn free(&self, a: &Alloc) {
        if let (Backend::Emu(e), Alloc::Emu(a)) = (&self.backend, a) {
            e.free(a)
        }
    }
    /// Copy `src` to byte `offset` of `dst`; the range must fit.
    pub(crate) fn upload(&self, dst: &mut Alloc, offset: usize, src: &[u8]) -> Result<()> {
        match (&self.backend, dst) {
            (Backend::Cuda(c), Alloc::Cuda(a)) => c.upload(a, offset, src),
            (Backend::Emu(_), Alloc::Emu(a)) => {
                a.as_bytes_mut()[offset..offset + src.len()].copy_from_slice(src);
                Ok(())
            }
            _ => Err(foreign()),
        }
    }
    /// Copy from byte `offset` of `src` into `dst`; the range must fit.
    pub(crate) fn download(&self, src: &Alloc, offset: usize, dst: &mut [u8]) -> Result<()> {
        match (&self.backend, src) {
            (Backend::Cuda(c), Alloc::Cuda(a)) => c.download(a, offset, dst),
            (Backend::Emu(_), Alloc::Emu(a)) => {
                dst.copy_from_slice(&a.as_bytes()[offset..offset + dst.len()]);
                Ok(())
            }
            _ => Err(foreign()),
        }
    }
    pub(crate) fn fill_u32(&self, dst: &mut Alloc, value: u32) -> Result<()> {
        match (&self.backend, dst) {
            (Backend::Cuda(c), Alloc::Cuda(a)) => c.fill_u32(a, value),
            (Backend::Emu(_), Alloc::Emu(a)) => {
                for chunk in a.as_bytes_mut().chunks_mut(4) {
                    chunk.copy_from_slice(&value.to_le_bytes()[..chunk.len()]);
                }
                Ok(())
            }
            _ => Err(foreign()),
        }
    }
}

fn foreign() -> Error {
    Error::BadLaunch { kernel: String::new(), reason: "buffer belongs to a context of another backend".into() }
}

impl<T: DeviceRepr> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        self.inner.free(&self.alloc);
    }
}

/// The entry point: a backend (a CUDA device or the CPU emulator) with the
/// library's kernels loaded.
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
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Context({}: {})", self.backend(), self.device_name())
    }
}

fn kernel_table() -> HashMap<&'static str, &'static HostKernel> {
    gpuprim_kernels::host_kernels().iter().map(|k| (k.name, k)).collect()
}

impl Context {
    /// CUDA when an NVIDIA driver and device are present, the CPU emulator
    /// otherwise. Set `GPUPRIM_BACKEND=emu` (or `cuda`) to choose.
    pub fn new() -> Result<Self> {
        match std::env::var("GPUPRIM_BACKEND").as_deref() {
            Ok("emu") | Ok("emulator") => Ok(Self::emulator()),
            Ok("cuda") => Self::cuda(),
            _ => Ok(Self::cuda().unwrap_or_else(|_| Self::emulator())),
        }
    }

    /// The CUDA backend on device 0, or why it cannot be had.
    pub fn cuda() -> Result<Self> {
        let cuda = Cuda::new(crate::PTX)?;
        Ok(Context {
            inner: Arc::new(Inner {
                scratch: Default::default(),
                backend: Backend::Cuda(Box::new(cuda)),
                kernels: kernel_table(),
            }),
        })
    }

    /// The CPU emulator with default settings.
    pub fn emulator() -> Self {
        Self::emulator_with(EmuConfig::default())
    }

    /// The CPU emulator with the given settings (seed, resident blocks ...).
    pub fn emulator_with(config: EmuConfig) -> Self {
        Context {
            inner: Arc::new(Inner {
                scratch: Default::default(),
                backend: Backend::Emu(Emulator::new(config)),
                kernels: kernel_table(),
            }),
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

    /// Streaming multiprocessors (the emulator reports its resident blocks).
    pub fn multiprocessors(&self) -> u32 {
        match &self.inner.backend {
            Backend::Cuda(c) => c.multiprocessors(),
            Backend::Emu(e) => e.config().resident_blocks.max(1),
        }
    }

    /// A buffer of `len` elements whose contents are unspecified.
    pub fn alloc<T: DeviceRepr>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        DeviceBuffer::new(self.inner.clone(), len)
    }

    /// A buffer holding a copy of `data`.
    pub fn upload<T: DeviceRepr>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        let mut b = self.alloc(data.len())?;
        b.copy_from_host(data)?;
        Ok(b)
    }

    /// Stream-ordered copy between device buffers of equal length.
    pub fn copy<T: DeviceRepr>(&self, src: &DeviceBuffer<T>, dst: &mut DeviceBuffer<T>) -> Result<()> {
        if src.len() != dst.len() {
            return Err(Error::LengthMismatch { what: "copy destination", expected: src.len(), got: dst.len() });
        }
        match (&self.inner.backend, &src.alloc, &mut dst.alloc) {
            (Backend::Cuda(c), Alloc::Cuda(s), Alloc::Cuda(d)) => c.copy(d, s),
            (Backend::Emu(_), Alloc::Emu(s), Alloc::Emu(d)) => {
                d.as_bytes_mut().copy_from_slice(s.as_bytes());
                Ok(())
            }
            _ => Err(foreign()),
        }
    }

    /// Wait until all queued work has finished.
    pub fn synchronize(&self) -> Result<()> {
        match &self.inner.backend {
            Backend::Cuda(c) => c.synchronize(),
            Backend::Emu(_) => Ok(()),
        }
    }

    /// Run `f` and return its result with the device time of the work it
    /// queued: CUDA events on the GPU, wall-clock time on the emulator.
    /// On the GPU this includes the host's submission of each launch; see
    /// [`time_held`](Context::time_held) for the GPU's execution alone.
    pub fn time<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<(R, Duration)> {
        match &self.inner.backend {
            Backend::Cuda(c) => c.time(f),
            Backend::Emu(_) => {
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
    /// of a time. On the emulator this is the same as [`time`](Context::time).
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
        match &self.inner.backend {
            Backend::Cuda(c) => c.time_held(f),
            Backend::Emu(_) => self.time(f),
        }
    }

    /// Look up a kernel by its entry name.
    pub fn kernel(&self, name: &str) -> Result<&'static HostKernel> {
        self.inner.kernels.get(name).copied().ok_or_else(|| {
            let mut close: Vec<&str> = self
                .inner
                .kernels
                .keys()
                .copied()
                .filter(|k| k.split('_').take(2).eq(name.split('_').take(2)))
                .collect();
            close.sort_unstable();
            close.truncate(8);
            Error::UnknownKernel {
                name: name.into(),
                hint: if close.is_empty() { String::new() } else { format!("; similar: {}", close.join(", ")) },
            }
        })
    }

    /// Launch a kernel by name, checking the arguments against its
    /// parameters and the shape against its block size and the limits.
    /// On the emulator the launch runs to completion before this returns.
    ///
    /// # Safety
    /// Pointer arguments must be addresses of live buffers of this context,
    /// large enough for everything the kernel reads and writes with the
    /// other arguments.
    pub unsafe fn launch(&self, name: &str, cfg: LaunchConfig, args: &[Arg]) -> Result<()> {
        let k = self.kernel(name)?;
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
        match &self.inner.backend {
            Backend::Cuda(c) => {
                let mut slots = [0u64; 16];
                if args.len() > slots.len() {
                    return bad(format!("{} parameters (at most {})", args.len(), slots.len()));
                }
                for (s, a) in slots.iter_mut().zip(args) {
                    *s = slot(a);
                }
                // SAFETY: argument kinds match the kernel (checked above);
                // pointers are the caller's contract.
                unsafe { c.launch(name, cfg.grid, cfg.block, cfg.shared_bytes, &mut slots[..args.len()]) }
            }
            Backend::Emu(e) => e
                .launch(k, cfg.grid, cfg.block, cfg.shared_bytes as usize, args)
                .map_err(|fault| Error::Emulator { kernel: name.into(), fault }),
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
    /// Fill `buf` on the device with `hash_value(i, seed)`: integers
    /// 0 ..= 2000 from a hash of the index (see
    /// `gpuprim_kernels::util::hash_value`, which computes the same on the
    /// host). For test inputs too large to upload quickly.
    /// Set element 0 of `buf` to `value`, stream-ordered (a one-thread
    /// kernel rather than a copy from the host, which would wait for the
    /// queued work). `T` of at most 16 bytes, a multiple of 4.
    pub(crate) fn set_first<T: DeviceRepr>(&self, buf: &mut DeviceBuffer<T>, value: T) -> Result<()> {
        let size = std::mem::size_of::<T>();
        if buf.is_empty() || size > 16 || !size.is_multiple_of(4) {
            return Err(Error::Unsupported {
                what: "set_first".into(),
                reason: format!("needs a non-empty buffer of 4, 8, 12 or 16-byte elements, not {size} bytes"),
            });
        }
        let mut words = [0u64; 2];
        crate::buffer::as_bytes_mut(&mut words)[..size].copy_from_slice(crate::buffer::as_bytes(&[value]));
        // SAFETY: element 0 of `buf` is `size` bytes, 4-byte aligned.
        unsafe {
            self.launch(
                "util_set_words_any_u32_b32",
                LaunchConfig { grid: 1, block: 32, shared_bytes: 0 },
                &[buf.arg(), words[0].into(), words[1].into(), ((size / 4) as u32).into()],
            )
        }
    }

    pub fn fill_hash<T: crate::Scalar>(&self, buf: &mut DeviceBuffer<T>, seed: u64) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let grid = (buf.len() as u64).div_ceil(256).clamp(1, self.multiprocessors() as u64 * 8) as u32;
        let name = format!("util_fill_hash_any_{}_b256", T::NAME);
        // SAFETY: `buf` holds len elements, which is what the kernel writes.
        unsafe {
            self.launch(
                &name,
                LaunchConfig { grid, block: 256, shared_bytes: 0 },
                &[buf.arg(), (buf.len() as u64).into(), seed.into()],
            )
        }
    }
}
