//! Backends: the CUDA driver (loaded at run time, through `cudarc`) and
//! the CPU emulator.

pub mod cuda;
pub mod emu;

/// Which backend a [`crate::Context`] runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// An NVIDIA GPU through the CUDA driver.
    Cuda,
    /// The CPU emulator.
    Emulator,
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BackendKind::Cuda => "cuda",
            BackendKind::Emulator => "emu",
        })
    }
}
