//! The CUDA backend: cust for the context, module, stream, memory, launches
//! and events.

use crate::error::{CudaContext, Error, Result};
use cust::memory::{CopyDestination, DeviceBuffer};
use cust::prelude::{Context, Device, Module, Stream, StreamFlags};
use std::ffi::c_void;
use std::time::Duration;

/// A CUDA context on device 0 with the embedded kernels loaded.
pub struct Cuda {
    // Field order is drop order: stream and module before the context.
    stream: Stream,
    module: Module,
    /// Words of mapped host memory for [`Cuda::time_held`], made on first use.
    held: std::sync::Mutex<Option<HeldWords>>,
    device: Device,
    _context: Context,
    sms: u32,
    /// Function handles by entry name (`CUfunction` as an address): looked
    /// up once, so a launch costs the driver call alone.
    functions: std::sync::Mutex<std::collections::HashMap<String, usize>>,
}

/// Device memory of the CUDA backend.
pub struct CudaAlloc {
    buf: Option<DeviceBuffer<u8>>,
    bytes: usize,
}

impl CudaAlloc {
    pub fn addr(&self) -> u64 {
        self.buf.as_ref().map(|b| b.as_device_ptr().as_raw()).unwrap_or(0)
    }
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Cuda {
    /// Initialise the driver, take device 0 and load `ptx`.
    pub fn new(ptx: &str) -> Result<Self> {
        cust::init(cust::CudaFlags::empty())
            .map_err(|e| Error::NoCuda { reason: format!("the driver did not initialise ({e:?})") })?;
        let count = Device::num_devices().during("cuDeviceGetCount")?;
        if count == 0 {
            return Err(Error::NoCuda { reason: "the driver reports no devices".into() });
        }
        let device = Device::get_device(0).during("cuDeviceGet")?;
        let context = Context::new(device).during("cuCtxCreate")?;
        // Embedded machine code when it matches this GPU, else the driver
        // compiles the PTX (and caches the result on disk).
        let major = device.get_attribute(cust::device::DeviceAttribute::ComputeCapabilityMajor).unwrap_or(0);
        let minor = device.get_attribute(cust::device::DeviceAttribute::ComputeCapabilityMinor).unwrap_or(0);
        let arch = format!("sm_{major}{minor}");
        let module = if !crate::CUBIN.is_empty() && crate::CUBIN_ARCH.trim() == arch {
            Module::from_cubin(crate::CUBIN, &[]).during("cuModuleLoadData (cubin)")?
        } else {
            Module::from_ptx(ptx, &[]).during("cuModuleLoadData (PTX)")?
        };
        // A blocking stream: synchronous copies (on the legacy stream) wait
        // for the kernels queued here.
        let stream = Stream::new(StreamFlags::DEFAULT, None).during("cuStreamCreate")?;
        let sms =
            device.get_attribute(cust::device::DeviceAttribute::MultiprocessorCount).map(|v| v as u32).unwrap_or(1);
        Ok(Cuda {
            stream,
            module,
            held: Default::default(),
            device,
            _context: context,
            sms,
            functions: Default::default(),
        })
    }

    pub fn device_name(&self) -> String {
        self.device.name().unwrap_or_else(|_| "unknown NVIDIA GPU".into())
    }

    pub fn multiprocessors(&self) -> u32 {
        self.sms
    }

    pub fn alloc(&self, bytes: usize) -> Result<CudaAlloc> {
        if bytes == 0 {
            return Ok(CudaAlloc { buf: None, bytes });
        }
        // SAFETY: the bytes are written (copied or poisoned) before any
        // read through the library's API.
        let buf = unsafe { DeviceBuffer::<u8>::uninitialized(bytes) }
            .map_err(|e| Error::OutOfMemory { bytes, reason: format!("{e:?}") })?;
        Ok(CudaAlloc { buf: Some(buf), bytes })
    }

    /// Copy `src` to byte `offset` of `dst` (in range: the caller checks).
    pub fn upload(&self, dst: &mut CudaAlloc, offset: usize, src: &[u8]) -> Result<()> {
        match dst.buf.as_mut() {
            Some(b) if !src.is_empty() => {
                let mut part = b.index(offset..offset + src.len());
                part.copy_from(src).during("cuMemcpyHtoD")
            }
            _ => Ok(()),
        }
    }

    /// Copy from byte `offset` of `src` into `dst` (in range: the caller
    /// checks). Waits for queued work first (blocking stream).
    pub fn download(&self, src: &CudaAlloc, offset: usize, dst: &mut [u8]) -> Result<()> {
        match src.buf.as_ref() {
            Some(b) if !dst.is_empty() => {
                let part = b.index(offset..offset + dst.len());
                part.copy_to(dst).during("cuMemcpyDtoH")
            }
            _ => Ok(()),
        }
    }

    /// Stream-ordered device-to-device copy (equal sizes).
    pub fn copy(&self, dst: &mut CudaAlloc, src: &CudaAlloc) -> Result<()> {
        use cust::memory::AsyncCopyDestination;
        match (dst.buf.as_mut(), src.buf.as_ref()) {
            // SAFETY: both buffers stay alive until the copy is done: the
            // caller holds them and every later use is stream-ordered.
            (Some(d), Some(s)) => unsafe { d.async_copy_from(s, &self.stream) }.during("cuMemcpyDtoDAsync"),
            _ => Ok(()),
        }
    }

    /// Stream-ordered fill of the allocation with the 32-bit `value`.
    pub fn fill_u32(&self, dst: &mut CudaAlloc, value: u32) -> Result<()> {
        match dst.buf.as_mut() {
            // SAFETY: the buffer outlives the queued memset (as above).
            Some(d) => unsafe { d.set_32_async(value, &self.stream) }.during("cuMemsetD32Async"),
            None => Ok(()),
        }
    }

    /// Queue `name` on the stream. Arguments are 64-bit slots holding each
    /// parameter's bytes at their start (little-endian).
    ///
    /// # Safety
    /// The argument values must match the kernel's parameters, pointers must
    /// be live device allocations large enough for what the kernel touches.
    pub unsafe fn launch(&self, name: &str, grid: u32, block: u32, shared: u32, slots: &mut [u64]) -> Result<()> {
        let func = {
            let mut cache = self.functions.lock().unwrap_or_else(|e| e.into_inner());
            match cache.get(name) {
                Some(&f) => f,
                None => {
                    let f = self
                        .module
                        .get_function(name)
                        .map_err(|_| Error::UnknownKernel {
                            name: name.into(),
                            hint: " in the loaded PTX module".into(),
                        })?
                        .to_raw() as usize;
                    cache.insert(name.to_string(), f);
                    f
                }
            }
        };
        let mut ptrs = [std::ptr::null_mut::<c_void>(); 16];
        if slots.len() > ptrs.len() {
            return Err(Error::BadLaunch {
                kernel: name.into(),
                reason: format!("{} parameters (at most 16)", slots.len()),
            });
        }
        for (p, s) in ptrs.iter_mut().zip(slots.iter_mut()) {
            *p = s as *mut u64 as *mut c_void;
        }
        // SAFETY: `func` is a live function of `self.module`; the parameter
        // pointers point at the slots, which outlive the call (the driver
        // copies parameters at launch); the rest is the caller's contract.
        let r = unsafe {
            cust_raw::cuLaunchKernel(
                func as cust_raw::CUfunction,
                grid,
                1,
                1,
                block,
                1,
                1,
                shared,
                self.stream.as_inner(),
                ptrs.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        if r != cust_raw::CUresult::CUDA_SUCCESS {
            return Err(Error::Driver { call: "cuLaunchKernel", code: r as u32 });
        }
        Ok(())
    }

    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().during("cuStreamSynchronize")
    }

    /// Time the work `f` queues on the stream with a pair of CUDA events.
    pub fn time<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<(R, Duration)> {
        use cust::event::{Event, EventFlags};
        let start = Event::new(EventFlags::DEFAULT).during("cuEventCreate")?;
        let stop = Event::new(EventFlags::DEFAULT).during("cuEventCreate")?;
        start.record(&self.stream).during("cuEventRecord")?;
        let r = f()?;
        stop.record(&self.stream).during("cuEventRecord")?;
        stop.synchronize().during("cuEventSynchronize")?;
        let ms = stop.elapsed_time_f32(&start).during("cuEventElapsedTime")?;
        Ok((r, Duration::from_secs_f64(ms as f64 / 1e3)))
    }

    /// Time the work `f` queues with the stream held: the
    /// [`hold`](gpuprim_kernels::timing::hold) kernel spins on a flag in
    /// mapped host memory while the start event, `f`'s work and the stop
    /// event are queued behind it; then the flag lets it go, and the events
    /// bracket GPU execution without the host's submission of each launch.
    pub fn time_held<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<(R, Duration)> {
        use cust::event::{Event, EventFlags};
        use std::sync::TryLockError;
        let mut guard = match self.held.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => {
                return Err(Error::Unsupported {
                    what: "time_held inside time_held".into(),
                    reason: "the stream is already held, by an enclosing call or another thread".into(),
                });
            }
        };
        let words = match guard.take() {
            Some(w) => w,
            None => HeldWords::new()?,
        };
        let words = &*guard.insert(words);
        let start = Event::new(EventFlags::DEFAULT).during("cuEventCreate")?;
        let stop = Event::new(EventFlags::DEFAULT).during("cuEventCreate")?;
        // No hold kernel of an earlier call is running: each call waits for
        // its own before it returns (below, or in `Release::drop`).
        words.set(FLAG, 0);
        words.set(TIMED_OUT, 0);
        let mut slots = [words.device_addr(FLAG), HOLD_TIMEOUT.as_nanos() as u64, words.device_addr(TIMED_OUT)];
        // SAFETY: the hold kernel takes (flag: *const u32, timeout_ns: u64,
        // timed_out: *mut u32); both pointers are device addresses of live
        // mapped words, which outlive the kernel (each call waits for it).
        unsafe { self.launch(gpuprim_kernels::timing::HOLD_KERNEL, 1, 32, 0, &mut slots)? };
        // From here on the flag must be set on every path, or the next wait
        // for the stream would last until the timeout.
        let mut release = Release { cuda: self, words, synchronized: false };
        start.record(&self.stream).during("cuEventRecord")?;
        let r = f()?;
        stop.record(&self.stream).during("cuEventRecord")?;
        release.release();
        stop.synchronize().during("cuEventSynchronize")?;
        release.synchronized = true;
        if words.get(TIMED_OUT) != 0 {
            return Err(Error::HoldTimedOut { timeout: HOLD_TIMEOUT });
        }
        let ms = stop.elapsed_time_f32(&start).during("cuEventElapsedTime")?;
        Ok((r, Duration::from_secs_f64(ms as f64 / 1e3)))
    }
}

/// How long the hold kernel of [`Cuda::time_held`] waits for the host.
const HOLD_TIMEOUT: Duration = Duration::from_millis(200);
/// Word of [`HeldWords`] the host sets to let the hold kernel go.
const FLAG: usize = 0;
/// Word of [`HeldWords`] the hold kernel sets when it gave up waiting.
const TIMED_OUT: usize = 1;

/// Two `u32` words of page-locked host memory mapped into the device's
/// address space (`cuMemHostAlloc` with `CU_MEMHOSTALLOC_DEVICEMAP`): the
/// flag and the timed-out word of the hold kernel. cust 0.3 has no wrapper
/// for mapped host memory, hence the raw calls.
struct HeldWords {
    host: *mut u32,
    device: u64,
}

// SAFETY: the words are plain memory usable from any thread; every access
// is volatile, and `Cuda::held`'s mutex serialises the calls that use them.
unsafe impl Send for HeldWords {}
// SAFETY: as above.
unsafe impl Sync for HeldWords {}

impl HeldWords {
    fn new() -> Result<Self> {
        let bytes = 2 * std::mem::size_of::<u32>();
        let mut host: *mut c_void = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; the context is current on this thread.
        let r = unsafe { cust_raw::cuMemHostAlloc(&mut host, bytes, cust_raw::CU_MEMHOSTALLOC_DEVICEMAP) };
        if r != cust_raw::CUresult::CUDA_SUCCESS || host.is_null() {
            return Err(Error::Driver { call: "cuMemHostAlloc", code: r as u32 });
        }
        // Owned from here, so an error below frees it.
        let mut words = HeldWords { host: host as *mut u32, device: 0 };
        // SAFETY: `host` is a live mapped allocation; flags must be 0.
        let r = unsafe { cust_raw::cuMemHostGetDevicePointer_v2(&mut words.device, host, 0) };
        if r != cust_raw::CUresult::CUDA_SUCCESS {
            return Err(Error::Driver { call: "cuMemHostGetDevicePointer", code: r as u32 });
        }
        Ok(words)
    }

    fn device_addr(&self, word: usize) -> u64 {
        self.device + (word * std::mem::size_of::<u32>()) as u64
    }

    fn get(&self, word: usize) -> u32 {
        // SAFETY: `word` < 2, inside the live allocation; volatile because
        // the GPU writes it.
        unsafe { self.host.add(word).read_volatile() }
    }

    fn set(&self, word: usize, v: u32) {
        // SAFETY: `word` < 2, inside the live allocation; volatile because
        // the GPU reads it while it runs.
        unsafe { self.host.add(word).write_volatile(v) };
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for HeldWords {
    fn drop(&mut self) {
        // SAFETY: allocated by `cuMemHostAlloc`, freed once; no kernel uses
        // it (each `time_held` waits for its hold kernel).
        unsafe { cust_raw::cuMemFreeHost(self.host as *mut c_void) };
    }
}

/// Lets the hold kernel go when dropped, on the early returns of
/// [`Cuda::time_held`] (an error from `f` or the driver, a panic) as well as
/// on success; where the stream was not waited for, waits for it, so the
/// next call can reuse the words.
struct Release<'a> {
    cuda: &'a Cuda,
    words: &'a HeldWords,
    synchronized: bool,
}

impl Release<'_> {
    fn release(&self) {
        self.words.set(FLAG, 1);
    }
}

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.release();
        if !self.synchronized {
            // The original error is what the caller needs; this one would
            // repeat it.
            let _ = self.cuda.stream.synchronize();
        }
    }
}
