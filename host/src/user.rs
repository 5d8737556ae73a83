//! Your own operators: kernels crates of yours, loaded into a [`Context`].
//!
//! gpuprim's kernels are generic over their operator ([`Monoid`],
//! [`Accumulate`]) and element type, and compiled to PTX ahead of time.
//! An operator of your own therefore gets kernels the same way the
//! shipped ones do, in three parts:
//!
//! 1. **A kernels crate** (`#![no_std]`, depending on `gpuprim-kernels`)
//!    defines the operator, names it ([`Named`]) and instantiates the
//!    generic kernels for it with `gpuprim_kernels::entries!`. The same
//!    crate builds for the GPU (the kernels) and for the host (a
//!    `register` function that lists them, for the emulator and for
//!    checking launches).
//! 2. **Your crate's `build.rs`** compiles it to PTX with
//!    `gpuprim_builder::Builder::new("kernels").build()`. That needs the
//!    nightly gpuprim pins and its `rust-src` component (the builder's
//!    errors name the `rustup` command); your crate itself stays on
//!    stable. Your crate also depends on the kernels crate as a normal
//!    dependency, for its `register` function and its operator types.
//! 3. **At run time** [`Context::load_kernels`] takes
//!    [`user_kernels!`](crate::user_kernels)`(your_kernels)`: the PTX
//!    (embedded from the build script's output) and the host half. From
//!    then on [`reduce_by`](crate::reduce::Reducer::reduce_by),
//!    [`inclusive_scan_by`](Context::inclusive_scan_by) and the other
//!    operator-generic calls find your instances on CUDA and on the
//!    emulator, where your code gets the emulator's race, barrier and
//!    bounds checks like the library's own.
//!
//! ```ignore
//! // kernels/src/lib.rs: the kernels crate.
//! #![no_std]
//! #![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]
//! #[cfg(not(target_arch = "nvptx64"))]
//! extern crate std;
//!
//! use gpuprim_kernels::ops::{Accumulate, Monoid, Named};
//! use gpuprim_kernels::reduce::reduction::{Plain, Reduction};
//! use gpuprim_kernels::reduce::vectorized::reduce_vectorized;
//!
//! #[derive(Clone, Copy, Debug, Default)]
//! pub struct MaxAbs;
//! impl Monoid<i32> for MaxAbs {
//!     const COMMUTATIVE: bool = true;
//!     fn identity() -> i32 { 0 }
//!     fn combine(a: i32, b: i32) -> i32 {
//!         if (b.unsigned_abs(), b) > (a.unsigned_abs(), a) { b } else { a }
//!     }
//! }
//! impl Accumulate<i32> for MaxAbs {
//!     type Acc = i32;
//!     fn lift(x: i32) -> i32 { x }
//! }
//! impl Named for MaxAbs {
//!     const NAME: &'static str = "maxabs";
//! }
//!
//! gpuprim_kernels::entries! {
//!     reduce_vectorized(a: *const <Op as Reduction>::In, b: *const <Op as Reduction>::In, n: u64,
//!          partials: *mut <Op as Reduction>::Acc, out: *mut <Op as Reduction>::Acc,
//!          counter: *mut u32, mode: u32) => reduce_vectorized::<Op, {B}>;
//!         ops [maxabs = Plain<T, MaxAbs>] types [i32] blocks [256];
//! }
//!
//! // build.rs of your crate, in its `main`:
//! gpuprim_builder::Builder::new("kernels").build().unwrap_or_else(|e| panic!("{e}"));
//!
//! // src/main.rs of your crate:
//! let ctx = gpuprim::Context::new()?;
//! ctx.load_kernels(&gpuprim::user_kernels!(my_kernels))?;
//! let x = ctx.upload(&[3, -7, 5])?;
//! assert_eq!(ctx.reduce_by::<i32, my_kernels::MaxAbs>(&x)?, -7);
//! ```
//!
//! # Maps: transform-reduce
//!
//! A [`Map`] turns each element (and its index) into a value that an
//! operator of the map's choosing combines, as the input is loaded: one
//! read of the input for a count, a mean and variance, a norm. The map is
//! a value: its fields (at most 16 bytes, `bytemuck::NoUninit`) reach
//! the kernel as parameters, so a threshold is chosen at run time.
//!
//! ```ignore
//! // In the kernels crate:
//! use gpuprim_kernels::ops::{Map, Named, Sum};
//! use gpuprim_kernels::reduce::mapped::reduce_map;
//!
//! #[derive(Clone, Copy, bytemuck::NoUninit)]
//! #[repr(C)]
//! pub struct CountAbove { pub threshold: f32 }
//! impl Map<f32> for CountAbove {
//!     type Out = u64;
//!     type Op = Sum;
//!     fn map(&self, x: f32, _index: u64) -> u64 { (x > self.threshold) as u64 }
//! }
//! impl Named for CountAbove { const NAME: &'static str = "count_above"; }
//!
//! gpuprim_kernels::entries! {
//!     reduce_map(a: *const T, s0: u64, s1: u64, n: u64, partials: *mut <Op as Map<T>>::Out,
//!          out: *mut <Op as Map<T>>::Out, counter: *mut u32, mode: u32) => reduce_map::<T, Op, {B}>;
//!         ops [count_above = CountAbove] types [f32] blocks [256];
//! }
//!
//! // In your crate, after load_kernels:
//! let above = ctx.transform_reduce(&x, CountAbove { threshold: 0.5 })?;
//! ```
//!
//! One instance serves every pass of every [`Finish`](crate::reduce::Finish)
//! (the passes over block partials run the same kernel). Built in:
//! [`MinMax`](crate::reduce::MinMax) and
//! [`ArgMinMax`](crate::reduce::ArgMinMax)
//! ([`Context::min_max`], [`Context::argmin_argmax`]). The examples
//! `examples/count-above` and `examples/welford` (mean and variance in
//! one pass, with a statistic type of its own) are complete crates.
//!
//! # Element types of your own
//!
//! A `#[repr(C)]` plain-data struct of a multiple of 4 bytes, up to 32,
//! can be the element of reductions (through
//! [`reduce_with`](Context::reduce_with): `ops [<NAME> = Fold<YourOp>]`
//! in the `reduce_map` line, and as a map's `Out`), up to 16 bytes also of
//! the scans, and of buffers, uploads and downloads: derive
//! `bytemuck::Pod` for it and declare it with
//! `gpuprim_kernels::device_type!` in your kernels crate, next to its
//! operators; instantiate the families for it there under its own name.
//!
//! ```
//! #[repr(C)]
//! #[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
//! pub struct Complex {
//!     pub re: f32,
//!     pub im: f32,
//! }
//! gpuprim_kernels::device_type!(Complex);
//!
//! let ctx = gpuprim::Context::emulator();
//! let z = [Complex { re: 1.0, im: -2.0 }, Complex { re: 0.5, im: 3.0 }];
//! let buf = ctx.upload(&z)?;
//! assert_eq!(buf.to_vec()?, z);
//! # Ok::<(), gpuprim::Error>(())
//! ```
//!
//! What is not plain data is refused when it compiles: padding (here
//! three bytes after `a`) ...
//!
//! ```compile_fail,E0277
//! #[repr(C)]
//! #[derive(Clone, Copy, Debug, Default)]
//! pub struct Padded {
//!     a: u8,
//!     b: u32,
//! }
//! gpuprim_kernels::device_type!(Padded);
//! ```
//!
//! ... pointers and references ...
//!
//! ```compile_fail,E0277
//! #[derive(Clone, Copy, Debug, Default)]
//! pub struct Borrowed(&'static u64);
//! gpuprim_kernels::device_type!(Borrowed);
//! ```
//!
//! ... and sizes a warp shuffle does not move (40 bytes here).
//!
//! ```compile_fail,E0080
//! #[repr(C)]
//! #[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
//! pub struct Moments {
//!     sums: [f64; 5],
//! }
//! gpuprim_kernels::device_type!(Moments);
//! ```
//!
//! The kernel families, their parameters and the operators' contracts are
//! those of the shipped instantiation lists (`reduce/mod.rs`,
//! `scan/mod.rs` of `gpuprim-kernels`): copy the line of the family you
//! want and change `ops`, `types` and `blocks`.
//!
//! # What the build needs, and what goes wrong
//!
//! - **On the machine that builds:** rustup, and the nightly gpuprim pins
//!   (`gpuprim_builder::PINNED_TOOLCHAIN`) with its `rust-src` component
//!   (the build compiles `core` for `nvptx64-nvidia-cuda`). No CUDA
//!   toolkit, no GPU: the PTX is text, and the driver compiles it for the
//!   GPU it is loaded on. A missing toolchain or component is
//!   `BuildError::MissingToolchain` / `MissingComponent`, whose message is
//!   the `rustup` command that installs it.
//! - **The first build** of a kernels crate compiles `core` and
//!   `gpuprim-kernels` for the GPU: a minute or two. Set
//!   `GPUPRIM_BUILDER_TARGET_DIR` to share that between crates.
//! - **A call the PTX cannot make** (a function that did not inline, a
//!   `std` call, a panic path that is not compiled away) is
//!   `BuildError::Unresolved`, naming the functions: the driver would
//!   refuse the module. Mark small helpers `#[inline(always)]`.
//! - **A type that is not plain data**, or of a size a warp shuffle does
//!   not move, does not compile (`device_type!`, see above); a map larger
//!   than 16 bytes does not compile either (its bytes are two kernel
//!   parameters).
//! - **At run time:** an operator, map or type whose kernel is in no loaded
//!   crate is [`Error::Unsupported`] before anything runs, saying what to
//!   instantiate; a PTX and `register` from different builds is
//!   [`Error::UserKernels`] from [`Context::load_kernels`]; a block size
//!   other than the instantiated ones is
//!   [`Error::UnsupportedBlockSize`]. The emulator runs your kernels with
//!   the same race, barrier and bounds checks as the library's own.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use gpuprim_kernels::HostKernel;

use crate::error::{Error, Result};
#[allow(unused_imports)] // for the docs
use crate::{
    Context,
    reduce::{Accumulate, Map, Monoid, Named},
};

/// A kernels crate of yours, ready for [`Context::load_kernels`]: its
/// name, its PTX and the function that lists its kernels on the host.
/// Made by [`user_kernels!`](crate::user_kernels).
#[derive(Clone, Copy)]
pub struct UserKernels {
    name: &'static str,
    ptx: &'static str,
    register: fn(&mut Vec<HostKernel>),
}

impl std::fmt::Debug for UserKernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UserKernels({}, {} bytes of PTX)", self.name, self.ptx.len())
    }
}

impl UserKernels {
    /// A kernels crate from its parts: `name` (for messages), the PTX text
    /// `gpuprim-builder` wrote, and the crate's `register` function (which
    /// `gpuprim_kernels::entries!` generates). The two must come from the
    /// same sources: [`Context::load_kernels`] checks that every kernel
    /// `register` lists is in the PTX.
    pub const fn new(name: &'static str, ptx: &'static str, register: fn(&mut Vec<HostKernel>)) -> Self {
        UserKernels { name, ptx, register }
    }

    /// The crate's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The PTX text.
    pub fn ptx(&self) -> &'static str {
        self.ptx
    }

    /// The crate's kernels as the host sees them, listed once per process
    /// (the records must live as long as the contexts that use them).
    pub(crate) fn host_kernels(&self) -> &'static [HostKernel] {
        type Listed = HashMap<(usize, usize), &'static [HostKernel]>;
        static LISTED: OnceLock<Mutex<Listed>> = OnceLock::new();
        let mut listed = LISTED.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
        let key = (self.ptx.as_ptr() as usize, self.register as usize);
        listed.entry(key).or_insert_with(|| {
            let mut v = Vec::new();
            (self.register)(&mut v);
            Vec::leak(v)
        })
    }

    /// Every kernel of `kernels` is an entry of the PTX; else the error
    /// naming the first few that are not.
    pub(crate) fn check_entries(&self, kernels: &[HostKernel]) -> Result<()> {
        let entries: std::collections::HashSet<&str> = ptx_entries(self.ptx).collect();
        let missing: Vec<&str> = kernels.iter().map(|k| k.name).filter(|n| !entries.contains(n)).collect();
        if kernels.is_empty() {
            return Err(self.error("its `register` lists no kernels (is its `entries!` list empty?)".into()));
        }
        if missing.is_empty() {
            return Ok(());
        }
        let shown: Vec<&str> = missing.iter().take(4).copied().collect();
        Err(self.error(format!(
            "{} of its {} kernels are not in its PTX ({}{}): the PTX was built from other sources or features \
             than the crate linked into this program; rebuild both",
            missing.len(),
            kernels.len(),
            shown.join(", "),
            if missing.len() > shown.len() { ", ..." } else { "" }
        )))
    }

    pub(crate) fn error(&self, reason: String) -> Error {
        Error::UserKernels { krate: self.name.into(), reason }
    }
}

/// The names of the kernels (`.entry` directives) of a PTX text.
pub(crate) fn ptx_entries(ptx: &str) -> impl Iterator<Item = &str> {
    ptx.lines().filter_map(|line| {
        let rest =
            line.trim_start().strip_prefix(".visible .entry ").or_else(|| line.trim_start().strip_prefix(".entry "))?;
        let name = rest.split(|c: char| c == '(' || c.is_whitespace()).next()?;
        (!name.is_empty()).then_some(name)
    })
}

/// A [`UserKernels`] for the kernels crate `krate` (a dependency of your
/// crate), with the PTX that `gpuprim_builder::Builder` wrote for it into
/// this crate's `OUT_DIR` (`<krate>.ptx`, the crate's name with `_`s).
/// A second argument gives the PTX text instead.
///
/// ```ignore
/// ctx.load_kernels(&gpuprim::user_kernels!(my_kernels))?;
/// ```
#[macro_export]
macro_rules! user_kernels {
    ($krate:ident) => {
        $crate::user::UserKernels::new(
            ::core::stringify!($krate),
            ::core::include_str!(::core::concat!(::core::env!("OUT_DIR"), "/", ::core::stringify!($krate), ".ptx")),
            $krate::register,
        )
    };
    ($krate:ident, $ptx:expr) => {
        $crate::user::UserKernels::new(::core::stringify!($krate), $ptx, $krate::register)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_entries_of_a_ptx_text() {
        let ptx = ".version 8.7\n.target sm_70\n\n\t// .globl\tadd_one\n.visible .entry add_one(\n\t.param .u64 a\n)\n{\n}\n.entry two (\n)\n.func helper()\n";
        assert_eq!(ptx_entries(ptx).collect::<Vec<_>>(), ["add_one", "two"]);
    }
}
