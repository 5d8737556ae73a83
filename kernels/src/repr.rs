//! Plain data in device memory: the element types the host uploads,
//! downloads and names kernels by.
//!
//! [`DeviceRepr`] is here, beside the kernels, rather than in the host
//! library, so that a kernels crate of yours can make its own types
//! elements ([`device_type!`](crate::device_type)); `gpuprim` re-exports it.

use crate::ops::Element;
use crate::ops::WideElement;
use crate::reduce::mapped::{ArgExtremes, Extremes};
use crate::reduce::reduction::Indexed;
use crate::scan::affine::Affine;

/// Plain data that can live in device memory: numbers, and the pairs and
/// records kernels exchange.
///
/// For a type of your own, use [`device_type!`](crate::device_type), which
/// checks what this trait's contract asks for.
///
/// # Safety
/// Implement only for `Copy` types without padding or pointers, valid for
/// every bit pattern, with the same layout on host and device.
pub unsafe trait DeviceRepr: Copy + Default + Send + Sync + core::fmt::Debug + 'static {
    /// The type's name in kernel entry names (`"f32"`).
    const NAME: &'static str;
}

macro_rules! plain {
    ($($t:ty => $name:literal),* $(,)?) => {$(
        // SAFETY: a plain number: no padding, every bit pattern valid.
        unsafe impl DeviceRepr for $t {
            const NAME: &'static str = $name;
        }
    )*};
}
plain!(u8 => "u8", i8 => "i8", u16 => "u16", i16 => "i16", i32 => "i32", u32 => "u32", i64 => "i64",
       u64 => "u64", f32 => "f32", f64 => "f64", half::f16 => "f16", half::bf16 => "bf16");

// SAFETY: an 8-byte value (`WideElement`) then an 8-byte index: 16 bytes,
// no padding. A 4-byte `W` would leave padding, so it is not covered.
unsafe impl<W: WideElement + DeviceRepr> DeviceRepr for Indexed<W> {
    const NAME: &'static str = "indexed";
}

// SAFETY: two fields of one plain number type: no padding.
unsafe impl<T: Element + DeviceRepr> DeviceRepr for Extremes<T> {
    const NAME: &'static str = "extremes";
}

// SAFETY: two `Indexed<W>` (16 bytes each, no padding, as above).
unsafe impl<W: WideElement + DeviceRepr> DeviceRepr for ArgExtremes<W> {
    const NAME: &'static str = "arg_extremes";
}

macro_rules! affine {
    ($($t:ty => $name:literal),* $(,)?) => {$(
        // SAFETY: `#[repr(C)]` pairs of two equal plain numbers, no
        // padding, valid for every bit pattern, same layout everywhere.
        unsafe impl DeviceRepr for Affine<$t> {
            const NAME: &'static str = $name;
        }
    )*};
}
affine!(u16 => "affine_u16", u32 => "affine_u32", f32 => "affine_f32", f64 => "affine_f64");

/// Make types of your own elements of gpuprim's kernels and buffers: each
/// gets [`DeviceRepr`] (named in kernel entries by its identifier, as
/// `entries!`'s `types [..]` names it) and
/// [`Shuffle`](crate::gpu::warp::Shuffle), so that it is an
/// [`Item`](crate::ops::Item) the warp, block and single-pass layers move.
///
/// Checked at compile time: the type must be [`bytemuck::Pod`] (plain
/// data: `#[repr(C)]` or transparent, no padding, no pointers, every bit
/// pattern valid; derive it with `bytemuck`'s `derive` feature) and a
/// multiple of 4 bytes up to 32 (what a warp shuffle moves). Reductions
/// take every such size; scans take up to 16 bytes (the look-back
/// publishes a tile's value in 16). It also needs `Default` and
/// `Debug`. Implement it in the crate that defines the type.
///
/// ```
/// #[repr(C)]
/// #[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
/// pub struct Complex {
///     pub re: f32,
///     pub im: f32,
/// }
/// gpuprim_kernels::device_type!(Complex);
/// # use gpuprim_kernels::DeviceRepr;
/// assert_eq!(<Complex as DeviceRepr>::NAME, "Complex");
/// ```
///
/// A type with padding, or of another size, does not compile:
///
/// ```compile_fail
/// #[repr(C)]
/// #[derive(Clone, Copy, Debug, Default)]
/// pub struct Padded { a: u8, b: u32 }
/// gpuprim_kernels::device_type!(Padded);
/// ```
///
/// ```compile_fail
/// #[repr(C)]
/// #[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
/// pub struct Wide { a: [f64; 5] }
/// gpuprim_kernels::device_type!(Wide);
/// ```
#[macro_export]
macro_rules! device_type {
    ($($t:ident),+ $(,)?) => {$(
        const _: fn() = || {
            fn plain_data<T: $crate::__private::bytemuck::Pod>() {}
            plain_data::<$t>();
        };
        const _: () = ::core::assert!(
            ::core::matches!(::core::mem::size_of::<$t>(), 4 | 8 | 12 | 16 | 20 | 24 | 28 | 32),
            "a gpuprim element type must be a multiple of 4 bytes up to 32 (what a warp shuffle moves)"
        );
        // SAFETY: `Pod` (checked above): `Copy` plain data without padding
        // or pointers, valid for every bit pattern, `#[repr(C)]` or
        // transparent, so laid out the same on host and device; a size a
        // shuffle moves (checked above).
        unsafe impl $crate::DeviceRepr for $t {
            const NAME: &'static str = ::core::stringify!($t);
        }
        // SAFETY: as above.
        unsafe impl $crate::gpu::warp::Shuffle for $t {}
    )+};
}
