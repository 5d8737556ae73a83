//! Device code of `gpuprim`, one source for two targets.
//!
//! * On `nvptx64-nvidia-cuda` every kernel named in an `entries!` list
//!   becomes a `#[no_mangle] extern "ptx-kernel"` function, and the device API
//!   in [`gpu`] lowers to PTX instructions (`bar.sync`, `shfl.sync`, `atom`).
//! * On the host the same kernels are plain functions, registered by name in
//!   [`host_kernels`], and the device API calls into the CPU emulator of the
//!   `gpuprim` crate, which runs each block's threads as coroutines with real
//!   barriers, shuffles among 32 lanes and checked shared memory.
//!
//! Kernel code never touches raw CUDA intrinsics: it goes through [`gpu`], so
//! both targets see exactly the same algorithm.
//!
//! # Layers
//!
//! Each layer uses only the ones above it in this list:
//!
//! | module | scope |
//! |---|---|
//! | [`gpu`] | the device API: indices, barriers, shuffles, shared memory, atomics, vector loads |
//! | [`ops`] | operators as monoids ([`ops::Monoid`]), element types, [`ops::Item`] |
//! | [`warp`] | warp scan and reductions over any monoid |
//! | [`block`] | block scan and reduction, tiles (striped loads with an out-of-bounds fill, blocked views) |
//! | [`single_pass`] | tile status, tickets and the decoupled look-back, for every one-pass kernel |
//! | [`reduce`], [`scan`], ... | one folder per primitive: its kernels, its `policy` (tuning as data) and its `entries!` list |
//! | [`lectures`] | the textbook variants, apart from the defaults |
//!
//! A new primitive is one folder here (kernels, `policy.rs`, an `entries!`
//! list and a `register` line in [`host_kernels`]), one host file in
//! `gpuprim` (builder, plan, `Context` one-liners), one test file and one
//! bench-case file.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        abi_ptx,
        stdarch_nvptx,
        asm_experimental_arch,
        core_intrinsics,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem,
        link_llvm_intrinsics
    )
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]
#![deny(unsafe_op_in_unsafe_fn)]
// Kernel functions take their launch parameters one by one, as the PTX
// entry does; bundling them in a struct would only hide the signature.
#![allow(clippy::too_many_arguments)]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

#[macro_use]
mod entry;
pub mod block;
pub mod by_key;
pub mod gpu;
pub mod lectures;
pub mod ops;
pub mod reduce;
mod repr;
pub mod scan;
pub mod segmented;
pub mod select;
pub mod single_pass;
// Kernels that misbehave on purpose, for the emulator's tests; only with
// the `testing` feature, so they are not shipped.
#[cfg(feature = "testing")]
pub mod testing;
pub mod timing;
pub mod util;
pub mod warp;

#[cfg(not(target_arch = "nvptx64"))]
pub use entry::host::{Arg, HostKernel, KernelParam, ParamKind};
pub use repr::DeviceRepr;

/// What [`entries!`] expands to in other crates; not an API.
#[doc(hidden)]
pub mod __private {
    pub use bytemuck;
    pub use paste;
}

/// Every kernel of this crate, as the emulator sees it: name, parameter
/// kinds and a host function. The CUDA backend uses the same table to check
/// launch arguments before handing them to the driver.
#[cfg(not(target_arch = "nvptx64"))]
pub fn host_kernels() -> &'static [HostKernel] {
    static TABLE: std::sync::OnceLock<std::vec::Vec<HostKernel>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut v = std::vec::Vec::new();
        reduce::register(&mut v);
        scan::register(&mut v);
        select::register(&mut v);
        by_key::register(&mut v);
        segmented::register(&mut v);
        lectures::register(&mut v);
        #[cfg(feature = "testing")]
        testing::register(&mut v);
        timing::register(&mut v);
        util::register(&mut v);
        v
    })
}
