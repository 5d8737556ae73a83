//! GPU reductions and scans whose kernels are written in Rust.
//!
//! Its kernels (the `gpuprim-kernels` crate) are Rust, compiled to PTX by
//! rustc's own NVPTX backend when the library is released, and shipped in
//! this crate as PTX for every NVIDIA GPU from Volta (sm_70) on plus
//! machine code for compute capability 8.x and 9.0. They are launched
//! through the CUDA driver, which is loaded at run time (with `cudarc`):
//! building needs only stable Rust, no CUDA toolkit, and a program starts
//! on machines with no NVIDIA driver too. There, the same kernels run on a
//! CPU emulator that behaves like a GPU: blocks with their own shared
//! memory, real barriers, 32-lane warps that do not run in lockstep, and
//! checks for data races and out-of-bounds accesses.
//!
//! Operations take [`DeviceInput`]s and [`DeviceOutput`]s: buffers the
//! library allocated, borrowed [views](DeviceSlice) of them or of memory
//! your own CUDA code owns, and cudarc's `CudaSlice`/`CudaView`s; they run
//! on the [`Context`]'s stream, which can be yours
//! ([`Context::from_cudarc_stream`]).
//!
//! ```
//! use gpuprim::Context;
//! # fn main() -> gpuprim::Result<()> {
//! let ctx = Context::new()?; // CUDA when a GPU is present, else the emulator
//! let data: Vec<f32> = (0..10_000).map(|i| (i % 7) as f32 * 0.5).collect();
//! let buf = ctx.upload(&data)?;
//! let total = ctx.sum(&buf)?;
//! assert!((total - data.iter().sum::<f32>()).abs() < 1e-2);
//! # Ok(()) }
//! ```

pub mod artifact;
pub mod backend;
mod buffer;
pub mod by_key;
mod context;
mod error;
mod kernel;
pub mod reduce;
pub mod scan;
pub mod segmented;
pub mod select;
mod single_pass;
pub mod user;

pub use backend::BackendKind;
pub use backend::emu::{EmuConfig, Fault, FaultKind};
pub use buffer::{DeviceBuffer, DeviceInput, DeviceOutput, DeviceRepr, DeviceSlice, DeviceSliceMut, Scalar, WideRepr};
pub use by_key::{ByKey, ByKeyTemp, RunCount};
pub use context::{Context, Event, LaunchConfig, MAX_SHARED_BYTES};
/// The cudarc version gpuprim is built with, for its stream and memory types.
pub use cudarc;
pub use error::{Error, Result};
pub use gpuprim_kernels::Arg;
/// The `half` crate's `f16` and `bf16`, element types of reductions.
pub use half;
pub use scan::{Scan, ScanAlgorithm, ScanTemp};
pub use segmented::{Segmented, SegmentedTemp};
pub use select::{Predicate, Select, SelectTemp};
pub use user::UserKernels;

/// The crate README's examples, compiled and run as doc tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
