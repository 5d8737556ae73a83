//! The one error type of the library.

use crate::backend::emu::Fault;

/// Everything that can go wrong in a `gpuprim` call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A CUDA driver call failed.
    #[error("CUDA driver call {call} failed: {source}")]
    Cuda {
        call: &'static str,
        #[source]
        source: cudarc::driver::DriverError,
    },
    /// There is no NVIDIA driver or no CUDA device here: the only case in
    /// which [`Context::new`](crate::Context::new) falls back to the
    /// emulator.
    #[error("no usable CUDA device: {reason}")]
    NoCuda { reason: String },
    /// A CUDA device that the library's kernels cannot run on.
    #[error("unsupported GPU {name} (compute capability {major}.{minor}): {reason}")]
    UnsupportedDevice { name: String, major: i32, minor: i32, reason: String },
    /// The embedded PTX has no kernel of this name.
    #[error("no kernel named `{name}`{hint}")]
    UnknownKernel { name: String, hint: String },
    /// Launch arguments do not match the kernel's parameters.
    #[error("kernel `{kernel}` takes ({expected}) but was given ({got})")]
    BadArguments { kernel: String, expected: String, got: String },
    /// A launch shape the kernel or the device cannot run.
    #[error("invalid launch of `{kernel}`: {reason}")]
    BadLaunch { kernel: String, reason: String },
    /// A block size outside the instantiated set.
    #[error("unsupported block size {block}: {reason}")]
    UnsupportedBlockSize { block: u32, reason: String },
    /// Two buffers that must have the same length do not.
    #[error("length mismatch: {what} has {got} elements, expected {expected}")]
    LengthMismatch { what: &'static str, expected: usize, got: usize },
    /// An input larger than the algorithm can index.
    #[error("{what}: {len} elements is more than the supported {max}")]
    TooLarge { what: &'static str, len: u64, max: u64 },
    /// The CPU emulator caught a kernel doing something a GPU would not
    /// survive (race, out-of-bounds access, barrier misuse, ...).
    #[error("emulator: kernel `{kernel}`: {fault}")]
    Emulator { kernel: String, fault: Fault },
    /// A combination of options this operation does not offer.
    #[error("unsupported: {what}: {reason}")]
    Unsupported { what: String, reason: String },
    /// `Context::time_held` held the stream until its timeout: the closure
    /// waited for the GPU, which cannot run its work while held.
    #[error(
        "time_held: the stream stayed held for {timeout:?}: the timed closure waited for the GPU (a synchronous \
         copy, a download, a free or an allocation that synchronises, `synchronize`), or queued more launches \
         than the driver's queue holds, so its time cannot be measured with the stream held; queue only \
         asynchronous work in it, or use `Context::time`"
    )]
    HoldTimedOut { timeout: std::time::Duration },
    /// Memory for a buffer could not be had.
    #[error("cannot allocate {bytes} bytes of device memory: {reason}")]
    OutOfMemory { bytes: usize, reason: String },
    /// A view or copy reaching past the end of the memory it is taken from.
    #[error("{what}: elements {start}..{end} are outside the {len} available")]
    OutOfRange { what: &'static str, start: usize, end: usize, len: usize },
    /// A device address not aligned for its element type.
    #[error("{what}: address {addr:#x} is not a multiple of {align} bytes")]
    Misaligned { what: &'static str, addr: u64, align: usize },
    /// Memory that belongs to another context, device or backend than the
    /// one the operation runs on.
    #[error("{what}: the memory belongs to {owner}, the operation runs on {here}")]
    ForeignMemory { what: &'static str, owner: String, here: String },
    /// Input whose contents break the operation's contract, found on the
    /// device (segment offsets that decrease or pass the end of the input).
    #[error("invalid {what}: {reason}")]
    InvalidInput { what: &'static str, reason: String },
    /// A kernels crate of yours that
    /// [`Context::load_kernels`](crate::Context::load_kernels) cannot take:
    /// kernels missing from its PTX, names the library or another loaded
    /// crate already uses, PTX the driver refuses.
    #[error("kernels crate `{krate}`: {reason}")]
    UserKernels { krate: String, reason: String },
    /// The shipped kernel artifact could not be read (a packaging fault).
    #[error("kernel artifact {file}: {reason}")]
    Artifact { file: &'static str, reason: String },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) trait CudaContext<T> {
    fn during(self, call: &'static str) -> Result<T>;
}

impl<T> CudaContext<T> for Result<T, cudarc::driver::DriverError> {
    fn during(self, call: &'static str) -> Result<T> {
        self.map_err(|source| Error::Cuda { call, source })
    }
}
