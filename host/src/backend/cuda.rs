//! The CUDA backend, on the driver API through `cudarc`, which loads
//! `libcuda` at run time: a binary that uses gpuprim starts on a machine
//! without an NVIDIA driver (and runs on the emulator there), and needs no
//! CUDA toolkit to build.
//!
//! Every entry into the driver first binds the device's primary context to
//! the calling thread, so a [`crate::Context`] and its buffers work from
//! any thread. Kernel modules are loaded per group on first use (see
//! [`crate::artifact`]).

use crate::artifact::{self, Image};
use crate::error::{CudaContext as _, Error, Result};
use cudarc::driver::sys::{self, CUdevice_attribute};
use cudarc::driver::{CudaContext, CudaStream, DriverError, result};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The NVIDIA driver, if present: `Ok(number of devices)`, or why not.
/// Never panics: the library is looked for before any call.
pub fn device_count() -> Result<usize> {
    // SAFETY: only tries to open the shared library.
    if !unsafe { sys::is_culib_present() } {
        return Err(Error::NoCuda { reason: "the NVIDIA driver library (libcuda) is not installed".into() });
    }
    match result::init() {
        Ok(()) => {}
        Err(DriverError(sys::CUresult::CUDA_ERROR_NO_DEVICE)) => return Ok(0),
        Err(e @ DriverError(sys::CUresult::CUDA_ERROR_STUB_LIBRARY))
        | Err(e @ DriverError(sys::CUresult::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)) => {
            return Err(Error::NoCuda { reason: format!("the driver did not initialise: {e}") });
        }
        Err(e) => return Err(Error::Cuda { call: "cuInit", source: e }),
    }
    Ok(result::device::get_count().during("cuDeviceGetCount")?.max(0) as usize)
}

/// One CUDA device (its primary context) with the library's kernels.
pub struct Cuda {
    ctx: Arc<CudaContext>,
    name: String,
    major: i32,
    minor: i32,
    sms: u32,
    /// Machine code shipped for this GPU, if any.
    image: Option<Image>,
    /// [`Cuda::dependent_launches`], decided once when the device is
    /// opened (the environment is not read on every launch).
    dependent: bool,
    /// Loaded modules by group, and function handles by entry name.
    loaded: Mutex<Loaded>,
    /// Extra PTX containers registered at run time (the tests' kernels).
    extra: Mutex<Vec<&'static artifact::Archive>>,
    /// Words of mapped host memory for [`Cuda::time_held`], made on first use.
    held: Mutex<Option<HeldWords>>,
}

#[derive(Default)]
struct Loaded {
    modules: HashMap<String, usize>,
    functions: HashMap<String, usize>,
    /// Functions whose dynamic shared memory limit was raised past the
    /// 48 KiB default, with the limit set.
    shared_limits: HashMap<usize, u32>,
    /// [`Cuda::resident_blocks`] by function, block size and dynamic
    /// shared memory (asked of the driver once each).
    resident: HashMap<(usize, u32, u32), u32>,
}

/// Dynamic shared memory a launch gets without opting in.
const DEFAULT_SHARED: u32 = 48 * 1024;

/// A device address handed to the driver.
pub type DevicePtr = u64;

impl Cuda {
    /// The device `ordinal`'s primary context (the one the CUDA runtime and
    /// cudarc use too, so memory is shared with them).
    pub fn new(ordinal: usize) -> Result<Self> {
        let count = device_count()?;
        if count == 0 {
            return Err(Error::NoCuda { reason: "the driver reports no CUDA devices".into() });
        }
        if ordinal >= count {
            return Err(Error::NoCuda { reason: format!("no CUDA device {ordinal}: there are {count}") });
        }
        let ctx = CudaContext::new(ordinal).during("cuDevicePrimaryCtxRetain")?;
        Self::from_context(ctx)
    }

    /// Wrap an existing cudarc context.
    pub fn from_context(ctx: Arc<CudaContext>) -> Result<Self> {
        ctx.bind_to_thread().during("cuCtxSetCurrent")?;
        let (major, minor) = ctx.compute_capability().during("cuDeviceGetAttribute")?;
        let name = ctx.name().unwrap_or_else(|_| "unknown NVIDIA GPU".into());
        if major < 7 {
            return Err(Error::UnsupportedDevice {
                name,
                major,
                minor,
                reason: "gpuprim's kernels need compute capability 7.0 (Volta) or newer".into(),
            });
        }
        let image = Image::machine_code_for(major, minor);
        let sms =
            ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).unwrap_or(1).max(1) as u32;
        Ok(Cuda {
            ctx,
            name,
            major,
            minor,
            sms,
            image,
            dependent: image == Some(Image::Sm90) && std::env::var("GPUPRIM_DEPENDENT_LAUNCH").as_deref() != Ok("0"),
            loaded: Default::default(),
            extra: Default::default(),
            held: Default::default(),
        })
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Make this device's context current on the calling thread.
    pub fn bind(&self) -> Result<()> {
        self.ctx.bind_to_thread().during("cuCtxSetCurrent")
    }

    /// The primary context's handle: memory with the same one is ours.
    pub fn domain(&self) -> u64 {
        self.ctx.cu_ctx() as u64
    }

    pub fn device_name(&self) -> String {
        self.name.clone()
    }

    pub fn compute_capability(&self) -> (i32, i32) {
        (self.major, self.minor)
    }

    pub fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }

    pub fn multiprocessors(&self) -> u32 {
        self.sms
    }

    /// Whether launches may be dependent launches here
    /// ([`crate::Context::launch_dependent`]): the kernels run the sm_90
    /// machine code, where their grid-dependency waits are instructions,
    /// and `GPUPRIM_DEPENDENT_LAUNCH` was not `0` when the device was
    /// opened.
    pub fn dependent_launches(&self) -> bool {
        self.dependent
    }

    /// Which image kernels load from on this GPU.
    pub fn image(&self) -> Image {
        self.image.unwrap_or(Image::Ptx)
    }

    /// A new stream of this device (non-blocking: it does not wait for the
    /// legacy default stream; every copy the library makes is ordered on
    /// its own stream).
    pub fn new_stream(&self) -> Result<Arc<CudaStream>> {
        self.ctx.new_stream().during("cuStreamCreate")
    }

    pub fn alloc(&self, bytes: usize) -> Result<DevicePtr> {
        if bytes == 0 {
            return Ok(0);
        }
        self.bind()?;
        // SAFETY: plain allocation; freed by `free`.
        unsafe { result::malloc_sync(bytes) }.map_err(|e| Error::OutOfMemory { bytes, reason: e.to_string() })
    }

    /// Free an allocation made by [`Cuda::alloc`]; errors are dropped (it
    /// runs in `Drop`).
    pub fn free(&self, ptr: DevicePtr) {
        if ptr != 0 && self.bind().is_ok() {
            // SAFETY: `ptr` came from `alloc` and is freed once.
            let _ = unsafe { result::free_sync(ptr) };
        }
    }

    /// Stream-ordered copy of `src` to `dst` (which the caller checked).
    pub fn upload(&self, stream: &CudaStream, dst: DevicePtr, src: &[u8]) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: `dst` holds `src.len()` bytes (checked by the caller).
        // Pageable host memory is staged before the call returns, so `src`
        // may be reused at once.
        unsafe { result::memcpy_htod_async(dst, src, stream.cu_stream()) }.during("cuMemcpyHtoDAsync")
    }

    /// Copy `src` into `dst` after the work queued on `stream`, and wait.
    pub fn download(&self, stream: &CudaStream, dst: &mut [u8], src: DevicePtr) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: `src` holds `dst.len()` bytes (checked by the caller); the
        // stream is synchronised before `dst` is used.
        unsafe { result::memcpy_dtoh_async(dst, src, stream.cu_stream()) }.during("cuMemcpyDtoHAsync")?;
        // SAFETY: a live stream of this context.
        unsafe { result::stream::synchronize(stream.cu_stream()) }.during("cuStreamSynchronize")
    }

    /// Stream-ordered device-to-device copy of `bytes`.
    pub fn copy(&self, stream: &CudaStream, dst: DevicePtr, src: DevicePtr, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: both ranges hold `bytes` (checked by the caller).
        unsafe { result::memcpy_dtod_async(dst, src, bytes, stream.cu_stream()) }.during("cuMemcpyDtoDAsync")
    }

    /// Stream-ordered fill of `words` 32-bit words at `dst` with `value`.
    pub fn fill_u32(&self, stream: &CudaStream, dst: DevicePtr, value: u32, words: usize) -> Result<()> {
        if words == 0 {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: `dst` holds `words` 4-byte words (checked by the caller).
        unsafe { sys::cuMemsetD32Async(dst, value, words, stream.cu_stream()) }.result().during("cuMemsetD32Async")
    }

    /// Stream-ordered fill of `bytes` bytes at `dst` with `value`.
    pub fn fill_u8(&self, stream: &CudaStream, dst: DevicePtr, value: u8, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: `dst` holds `bytes` bytes (checked by the caller).
        unsafe { result::memset_d8_async(dst, value, bytes, stream.cu_stream()) }.during("cuMemsetD8Async")
    }

    /// The allocation that contains `ptr`: `(base, bytes, owner context)`.
    pub fn address_range(&self, ptr: DevicePtr) -> Result<(u64, usize)> {
        self.bind()?;
        let mut base = 0u64;
        let mut size = 0usize;
        // SAFETY: out-pointers to locals.
        unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, ptr) }.result().during("cuMemGetAddressRange")?;
        Ok((base, size))
    }

    /// The function handle of entry `name`, loading its group on first use:
    /// machine code for this GPU when shipped, else PTX. With `module`,
    /// the entry is in that module of [`Cuda::load_user`]'s instead.
    fn function(&self, name: &str, module: Option<&str>) -> Result<sys::CUfunction> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&f) = loaded.functions.get(name) {
            return Ok(f as sys::CUfunction);
        }
        let module = match module {
            Some(key) => match loaded.modules.get(key) {
                Some(&m) => m as sys::CUmodule,
                None => return Err(unknown(name, &format!(" (its module {key} is not loaded)"))),
            },
            None => {
                let group = artifact::group_of(name);
                match loaded.modules.get(group) {
                    Some(&m) => m as sys::CUmodule,
                    None => {
                        let m = self.load_group(group, name)?;
                        loaded.modules.insert(group.to_string(), m as usize);
                        m
                    }
                }
            }
        };
        let cname = std::ffi::CString::new(name).map_err(|_| unknown(name, ""))?;
        // SAFETY: `module` is loaded on this context (bound in load_group or
        // earlier; bind again in case another thread's call moved us).
        self.bind()?;
        let f = unsafe { result::module::get_function(module, cname) }
            .map_err(|_| unknown(name, " (its module is loaded but lacks it)"))?;
        loaded.functions.insert(name.to_string(), f as usize);
        Ok(f)
    }

    fn load_group(&self, group: &str, name: &str) -> Result<sys::CUmodule> {
        self.bind()?;
        if let Some(image) = self.image {
            let archive = image.archive()?;
            if let Some(code) = archive.module(group) {
                // Copy into 8-byte aligned memory for the ELF loader.
                let mut words = vec![0u64; code.len().div_ceil(8)];
                bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..code.len()].copy_from_slice(code);
                // SAFETY: a complete cubin image for this GPU's architecture.
                return unsafe { result::module::load_data(words.as_ptr() as *const c_void) }
                    .during("cuModuleLoadData (machine code)");
            }
        }
        let ptx = Image::Ptx.archive()?.module(group).or_else(|| {
            let extra = self.extra.lock().unwrap_or_else(|e| e.into_inner());
            extra.iter().find_map(|a| a.module(group))
        });
        let Some(ptx) = ptx else {
            return Err(unknown(name, " in the shipped kernels"));
        };
        let mut text = ptx.to_vec();
        text.push(0);
        // SAFETY: NUL-terminated PTX text.
        unsafe { result::module::load_data(text.as_ptr() as *const c_void) }.during("cuModuleLoadData (PTX)")
    }

    /// Make the PTX modules of `archive` loadable (for kernels outside the
    /// shipped set, such as the tests' own).
    pub fn register(&self, archive: &'static artifact::Archive) {
        self.extra.lock().unwrap_or_else(|e| e.into_inner()).push(archive);
    }

    /// Load the PTX of a kernels crate of the user's as module `key`, once
    /// (later calls with the same key do nothing).
    pub fn load_user(&self, key: &str, ptx: &str) -> Result<()> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if loaded.modules.contains_key(key) {
            return Ok(());
        }
        self.bind()?;
        let mut text = ptx.as_bytes().to_vec();
        text.push(0);
        // SAFETY: NUL-terminated PTX text.
        let m = unsafe { result::module::load_data(text.as_ptr() as *const c_void) }
            .during("cuModuleLoadData (a kernels crate's PTX)")?;
        loaded.modules.insert(key.to_string(), m as usize);
        Ok(())
    }

    /// Load every shipped module now (what a JIT of everything costs).
    pub fn preload_all(&self) -> Result<usize> {
        let archive = match self.image {
            Some(i) => i.archive()?,
            None => Image::Ptx.archive()?,
        };
        let mut n = 0;
        for key in archive.keys() {
            let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
            if !loaded.modules.contains_key(key) {
                let m = self.load_group(key, key)?;
                loaded.modules.insert(key.to_string(), m as usize);
                n += 1;
            }
        }
        Ok(n)
    }

    /// Let `func` take `shared` bytes of dynamic shared memory, past the
    /// 48 KiB default (once per function and size; the shipped kernels and
    /// [`crate::MAX_SHARED_BYTES`] keep to 64 KiB, which every GPU from
    /// sm_70 on allows).
    fn allow_shared(&self, func: sys::CUfunction, name: &str, shared: u32) -> Result<()> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if loaded.shared_limits.get(&(func as usize)).is_some_and(|&set| set >= shared) {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: `func` is a live function of a module loaded on this
        // context.
        unsafe {
            result::function::set_function_attribute(
                func,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shared as i32,
            )
        }
        .map_err(|e| Error::BadLaunch {
            kernel: name.into(),
            reason: format!("{shared} bytes of shared memory: this GPU refuses them ({e})"),
        })?;
        loaded.shared_limits.insert(func as usize, shared);
        Ok(())
    }

    /// Blocks of `block` threads, each with `shared` bytes of dynamic
    /// shared memory, that fit on one multiprocessor at once for `name`
    /// (the driver's occupancy calculator: registers, shared memory and
    /// the block limit), at least 1.
    pub fn resident_blocks(&self, name: &str, module: Option<&str>, block: u32, shared: u32) -> Result<u32> {
        let func = self.function(name, module)?;
        let key = (func as usize, block, shared);
        if let Some(&n) = self.loaded.lock().unwrap_or_else(|e| e.into_inner()).resident.get(&key) {
            return Ok(n);
        }
        if shared > DEFAULT_SHARED {
            self.allow_shared(func, name, shared)?;
        }
        self.bind()?;
        // SAFETY: `func` is a live function of a module loaded on this
        // context.
        let n = unsafe { result::occupancy::max_active_block_per_multiprocessor(func, block as i32, shared as usize) }
            .during("cuOccupancyMaxActiveBlocksPerMultiprocessor")?;
        let n = n.max(1) as u32;
        self.loaded.lock().unwrap_or_else(|e| e.into_inner()).resident.insert(key, n);
        Ok(n)
    }

    /// Queue `name` (of the user module `module`, or shipped) on `stream`.
    /// Arguments are 64-bit slots holding each parameter's bytes at their
    /// start (little-endian).
    ///
    /// # Safety
    /// The argument values must match the kernel's parameters, pointers must
    /// be live device allocations large enough for what the kernel touches.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn launch(
        &self,
        stream: &CudaStream,
        name: &str,
        module: Option<&str>,
        grid: u32,
        block: u32,
        shared: u32,
        slots: &mut [u64],
        dependent: bool,
    ) -> Result<()> {
        let func = self.function(name, module)?;
        if shared > DEFAULT_SHARED {
            self.allow_shared(func, name, shared)?;
        }
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
        self.bind()?;
        // SAFETY: `func` is a live function of a loaded module; the parameter
        // pointers point at the slots, which outlive the call (the driver
        // copies parameters at launch); the rest is the caller's contract.
        if dependent {
            let mut attr = sys::CUlaunchAttribute {
                id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
                pad: [0; 4],
                // SAFETY: a plain-data union, all zeros a valid value.
                value: unsafe { std::mem::zeroed() },
            };
            attr.value.programmaticStreamSerializationAllowed = 1;
            let config = sys::CUlaunchConfig {
                gridDimX: grid,
                gridDimY: 1,
                gridDimZ: 1,
                blockDimX: block,
                blockDimY: 1,
                blockDimZ: 1,
                sharedMemBytes: shared,
                hStream: stream.cu_stream(),
                attrs: &mut attr,
                numAttrs: 1,
            };
            // SAFETY: as below; `config` and `attr` outlive the call.
            return unsafe { sys::cuLaunchKernelEx(&config, func, ptrs.as_mut_ptr(), std::ptr::null_mut()) }
                .result()
                .during("cuLaunchKernelEx");
        }
        unsafe {
            result::launch_kernel(
                func,
                (grid, 1, 1),
                (block, 1, 1),
                shared,
                stream.cu_stream(),
                &mut ptrs[..slots.len()],
            )
        }
        .during("cuLaunchKernel")
    }

    pub fn synchronize(&self, stream: &CudaStream) -> Result<()> {
        self.bind()?;
        // SAFETY: a live stream of this context.
        unsafe { result::stream::synchronize(stream.cu_stream()) }.during("cuStreamSynchronize")
    }

    /// Time the work `f` queues on `stream` with a pair of CUDA events.
    pub fn time<R>(&self, stream: &CudaStream, f: impl FnOnce() -> Result<R>) -> Result<(R, Duration)> {
        self.bind()?;
        let (start, stop) = (RawEvent::new()?, RawEvent::new()?);
        start.record(stream)?;
        let r = f()?;
        self.bind()?;
        stop.record(stream)?;
        stop.synchronize()?;
        Ok((r, start.elapsed(&stop)?))
    }

    /// Time the work `f` queues with the stream held: the
    /// [`hold`](gpuprim_kernels::timing::hold) kernel spins on a flag in
    /// mapped host memory while the start event, `f`'s work and the stop
    /// event are queued behind it; then the flag lets it go, and the events
    /// bracket GPU execution without the host's submission of each launch.
    pub fn time_held<R>(&self, stream: &CudaStream, f: impl FnOnce() -> Result<R>) -> Result<(R, Duration)> {
        use std::sync::TryLockError;
        let mut guard = match self.held.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => {
                return Err(Error::Unsupported {
                    what: "time_held inside time_held".into(),
                    reason: "the device is already held, by an enclosing call or another thread".into(),
                });
            }
        };
        self.bind()?;
        let words = match guard.take() {
            Some(w) => w,
            None => HeldWords::new()?,
        };
        let words = &*guard.insert(words);
        let (start, stop) = (RawEvent::new()?, RawEvent::new()?);
        // No hold kernel of an earlier call is running: each call waits for
        // its own before it returns (below, or in `Release::drop`).
        words.set(FLAG, 0);
        words.set(TIMED_OUT, 0);
        let mut slots = [words.device_addr(FLAG), HOLD_TIMEOUT.as_nanos() as u64, words.device_addr(TIMED_OUT)];
        // SAFETY: the hold kernel takes (flag: *const u32, timeout_ns: u64,
        // timed_out: *mut u32); both pointers are device addresses of live
        // mapped words, which outlive the kernel (each call waits for it).
        unsafe { self.launch(stream, gpuprim_kernels::timing::HOLD_KERNEL, None, 1, 32, 0, &mut slots, false)? };
        // From here on the flag must be set on every path, or the next wait
        // for the stream would last until the timeout.
        let mut release = Release { cuda: self, stream, words, synchronized: false };
        start.record(stream)?;
        let r = f()?;
        self.bind()?;
        stop.record(stream)?;
        release.release();
        stop.synchronize()?;
        release.synchronized = true;
        if words.get(TIMED_OUT) != 0 {
            return Err(Error::HoldTimedOut { timeout: HOLD_TIMEOUT });
        }
        Ok((r, start.elapsed(&stop)?))
    }
}

fn unknown(name: &str, hint: &str) -> Error {
    Error::UnknownKernel { name: name.into(), hint: hint.into() }
}

/// A bare CUDA event for timing (cudarc's `CudaEvent` needs its context in
/// an `Arc`, which timing does not).
struct RawEvent(sys::CUevent);

impl RawEvent {
    fn new() -> Result<Self> {
        Ok(RawEvent(result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT).during("cuEventCreate")?))
    }
    fn record(&self, stream: &CudaStream) -> Result<()> {
        // SAFETY: live event and stream of the current context.
        unsafe { result::event::record(self.0, stream.cu_stream()) }.during("cuEventRecord")
    }
    fn synchronize(&self) -> Result<()> {
        // SAFETY: live event.
        unsafe { result::event::synchronize(self.0) }.during("cuEventSynchronize")
    }
    fn elapsed(&self, stop: &RawEvent) -> Result<Duration> {
        // SAFETY: both events recorded and complete.
        let ms = unsafe { result::event::elapsed(self.0, stop.0) }.during("cuEventElapsedTime")?;
        Ok(Duration::from_secs_f64(ms as f64 / 1e3))
    }
}

impl Drop for RawEvent {
    fn drop(&mut self) {
        // SAFETY: created by `new`, destroyed once.
        let _ = unsafe { result::event::destroy(self.0) };
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
/// flag and the timed-out word of the hold kernel.
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
        // SAFETY: plain allocation; the context is current on this thread.
        let host = unsafe { result::malloc_host(bytes, sys::CU_MEMHOSTALLOC_DEVICEMAP) }.during("cuMemHostAlloc")?;
        // Owned from here, so an error below frees it.
        let mut words = HeldWords { host: host as *mut u32, device: 0 };
        // SAFETY: `host` is a live mapped allocation; flags must be 0.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut words.device, host, 0) }
            .result()
            .during("cuMemHostGetDevicePointer")?;
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
        let _ = unsafe { result::free_host(self.host as *mut c_void) };
    }
}

/// Page-locked host memory mapped into the device's address space: a
/// kernel's stores to [`MappedHost::device_addr`] land in host memory, which
/// the host reads once the stream is done, with no copy and no allocation
/// per use. The slot a reduction returned to the host is written into.
pub(crate) struct MappedHost {
    host: *mut u8,
    device: u64,
    bytes: usize,
}

// SAFETY: plain memory usable from any thread; its users serialise access
// (the owning stream's mutex) and read it only after the stream is done.
unsafe impl Send for MappedHost {}
// SAFETY: as above.
unsafe impl Sync for MappedHost {}

impl MappedHost {
    /// `bytes` of mapped memory (page-aligned). The context must be current
    /// on this thread ([`Cuda::bind`]).
    pub(crate) fn new(bytes: usize) -> Result<Self> {
        // SAFETY: plain allocation; the caller made the context current.
        let host = unsafe { result::malloc_host(bytes, sys::CU_MEMHOSTALLOC_DEVICEMAP) }.during("cuMemHostAlloc")?;
        // Owned from here, so an error below frees it.
        let mut mem = MappedHost { host: host as *mut u8, device: 0, bytes };
        // SAFETY: `host` is a live mapped allocation; flags must be 0.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut mem.device, host, 0) }
            .result()
            .during("cuMemHostGetDevicePointer")?;
        Ok(mem)
    }

    /// The device address of the first byte.
    pub(crate) fn device_addr(&self) -> u64 {
        self.device
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The first `size_of::<T>()` bytes as a `T`, read volatile (a kernel
    /// wrote them). Call only after the work that writes them is done.
    pub(crate) fn read<T: crate::buffer::DeviceRepr>(&self) -> T {
        assert!(std::mem::size_of::<T>() <= self.bytes, "mapped slot too small");
        // SAFETY: inside the live allocation, page-aligned; `DeviceRepr`
        // types are plain data valid for any bits.
        unsafe { (self.host as *const T).read_volatile() }
    }

    /// Fill every byte with `v` (before a kernel writes part of it).
    pub(crate) fn fill(&self, v: u8) {
        // SAFETY: inside the live allocation; no kernel uses it now (the
        // caller's contract on when this is called).
        unsafe { std::ptr::write_bytes(self.host, v, self.bytes) };
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for MappedHost {
    fn drop(&mut self) {
        // SAFETY: allocated by `cuMemHostAlloc`, freed once; its owner waits
        // for the work that writes it before letting go.
        let _ = unsafe { result::free_host(self.host as *mut c_void) };
    }
}

/// Lets the hold kernel go when dropped, on the early returns of
/// [`Cuda::time_held`] (an error from `f` or the driver, a panic) as well as
/// on success; where the stream was not waited for, waits for it, so the
/// next call can reuse the words.
struct Release<'a> {
    cuda: &'a Cuda,
    stream: &'a CudaStream,
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
            let _ = self.cuda.synchronize(self.stream);
        }
    }
}
