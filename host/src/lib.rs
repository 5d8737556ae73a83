//! GPU reductions and scans whose kernels are written in Rust.
//!
//! `gpuprim` compiles its kernels (the `gpuprim-kernels` crate) to PTX with
//! rustc's own NVPTX backend, embeds the PTX, and launches it through the CUDA
//! driver with `cust`. Where no NVIDIA driver is present, the same kernels run
//! on a CPU emulator that behaves like a GPU: blocks with their own shared
//! memory, real barriers, 32-lane warps that do not run in lockstep, and
//! checks for data races and out-of-bounds accesses.
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

pub mod backend;
mod buffer;
mod context;
mod error;
pub mod reduce;
pub mod scan;

pub use backend::BackendKind;
pub use backend::emu::{EmuConfig, Fault, FaultKind};
pub use buffer::{DeviceBuffer, DeviceRepr, Scalar};
pub use context::{Context, LaunchConfig};
pub use error::{Error, Result};
pub use gpuprim_kernels::Arg;
pub use scan::{Scan, ScanAlgorithm, ScanTemp};

/// The PTX of every kernel, as built from `kernels/` by `build.rs`.
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));
/// Machine code of every kernel for [`CUBIN_ARCH`], when the build was
/// asked for it (`GPUPRIM_CUBIN_ARCH`); empty otherwise.
pub const CUBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels.cubin"));
/// The GPU architecture [`CUBIN`] was built for (`"sm_90"`), or `""`.
pub const CUBIN_ARCH: &str = include_str!(concat!(env!("OUT_DIR"), "/cubin_arch.txt"));

/// The README's example, compiled and run as a doc test.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
