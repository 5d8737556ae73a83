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
        Ok(Cuda { stream, module, device, _context: context, sms, functions: Default::default() })
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
}
