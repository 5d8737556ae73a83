//! The textbook variants, kept apart from the library's defaults so that
//! the default modules ([`crate::reduce`], [`crate::scan`]) stay small:
//! the nine-step reduction lecture (variants 1-8; 9 is the default) and
//! the scan lectures (Hillis-Steele, Blelloch, three-phase, tickets). Each
//! is a kernel family of its own (`reduce_sequential`, `scan_blelloch`,
//! ...), in its own PTX module, and is built from the same warp, block and
//! single-pass layers as the defaults.

pub mod reduce;
pub mod scan;

/// Register the lecture kernels with the host-side table.
#[cfg(not(target_arch = "nvptx64"))]
pub(crate) fn register(out: &mut std::vec::Vec<crate::entry::host::HostKernel>) {
    reduce::register(out);
    scan::register(out);
}
