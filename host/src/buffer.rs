//! Typed device memory.

use crate::context::{Alloc, Inner};
use crate::error::{Error, Result};
use gpuprim_kernels::ops::Element;
use std::marker::PhantomData;
use std::sync::Arc;

/// Plain data that can live in a [`DeviceBuffer`]: numbers, and the pairs
/// and records kernels exchange.
///
/// # Safety
/// Implement only for `Copy` types without padding or pointers that are
/// valid for every bit pattern, with the same layout on host and device.
pub unsafe trait DeviceRepr: Copy + Default + Send + Sync + std::fmt::Debug + 'static {
    /// The type's name in kernel entry names (`"f32"`).
    const NAME: &'static str;
}

/// Element types of reductions and scans: `i32`, `u32`, `i64`, `u64`,
/// `f32`, `f64`.
pub trait Scalar: DeviceRepr + Element {}
impl<T: DeviceRepr + Element> Scalar for T {}

// SAFETY: plain bytes (temporary storage).
unsafe impl DeviceRepr for u8 {
    const NAME: &'static str = "u8";
}
// SAFETY: two 8-byte numbers, no padding (see the kernels' definition).
unsafe impl<W: Element> DeviceRepr for gpuprim_kernels::reduce::reduction::Indexed<W> {
    const NAME: &'static str = "indexed";
}
// SAFETY: plain numbers.
unsafe impl DeviceRepr for i32 {
    const NAME: &'static str = "i32";
}
// SAFETY: plain numbers.
unsafe impl DeviceRepr for u32 {
    const NAME: &'static str = "u32";
}
// SAFETY: plain numbers.
unsafe impl DeviceRepr for i64 {
    const NAME: &'static str = "i64";
}
// SAFETY: plain numbers.
unsafe impl DeviceRepr for u64 {
    const NAME: &'static str = "u64";
}
// SAFETY: plain numbers.
unsafe impl DeviceRepr for f32 {
    const NAME: &'static str = "f32";
}
// SAFETY: plain numbers.
unsafe impl DeviceRepr for f64 {
    const NAME: &'static str = "f64";
}

/// A typed array in device memory (or emulator memory), owned by the
/// [`crate::Context`] that made it.
pub struct DeviceBuffer<T: DeviceRepr> {
    pub(crate) alloc: Alloc,
    pub(crate) len: usize,
    pub(crate) inner: Arc<Inner>,
    _t: PhantomData<T>,
}

impl<T: DeviceRepr> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceBuffer<{}>[{}] at {:#x}", T::NAME, self.len, self.addr())
    }
}

pub(crate) fn as_bytes<T: DeviceRepr>(s: &[T]) -> &[u8] {
    // SAFETY: DeviceRepr types are plain data without padding.
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const u8, std::mem::size_of_val(s)) }
}
pub(crate) fn as_bytes_mut<T: DeviceRepr>(s: &mut [T]) -> &mut [u8] {
    // SAFETY: as above; every bit pattern is a valid DeviceRepr.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr() as *mut u8, std::mem::size_of_val(s)) }
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    pub(crate) fn new(inner: Arc<Inner>, len: usize) -> Result<Self> {
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or(Error::TooLarge {
            what: "buffer",
            len: len as u64,
            max: (usize::MAX / std::mem::size_of::<T>()) as u64,
        })?;
        let alloc = inner.alloc(bytes)?;
        Ok(DeviceBuffer { alloc, len, inner, _t: PhantomData })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Device address of the first element (what kernels receive).
    pub fn addr(&self) -> u64 {
        self.alloc.addr()
    }

    /// Launch argument pointing at the buffer.
    pub fn arg(&self) -> crate::Arg {
        crate::Arg::Ptr(self.addr())
    }

    /// Copy `src` into the buffer; the lengths must match.
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        if src.len() != self.len {
            return Err(Error::LengthMismatch { what: "host slice", expected: self.len, got: src.len() });
        }
        self.inner.upload(&mut self.alloc, 0, as_bytes(src))
    }

    /// Copy `src` into the first `src.len()` elements.
    pub fn copy_from_host_prefix(&mut self, src: &[T]) -> Result<()> {
        self.copy_from_host_at(0, src)
    }

    /// Copy `src` into elements `offset .. offset + src.len()`.
    ///
    /// ```
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let mut b = ctx.upload(&[0u32; 5])?;
    /// b.copy_from_host_at(3, &[7, 8])?;
    /// assert_eq!(b.to_vec()?, vec![0, 0, 0, 7, 8]);
    /// # Ok(()) }
    /// ```
    pub fn copy_from_host_at(&mut self, offset: usize, src: &[T]) -> Result<()> {
        if offset.checked_add(src.len()).is_none_or(|end| end > self.len) {
            return Err(Error::LengthMismatch {
                what: "host slice past the buffer's end",
                expected: self.len.saturating_sub(offset),
                got: src.len(),
            });
        }
        self.inner.upload(&mut self.alloc, offset * std::mem::size_of::<T>(), as_bytes(src))
    }

    /// Copy the buffer into `dst`; the lengths must match. Waits for the
    /// work queued before it.
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        if dst.len() != self.len {
            return Err(Error::LengthMismatch { what: "host slice", expected: self.len, got: dst.len() });
        }
        self.inner.download(&self.alloc, 0, as_bytes_mut(dst))
    }

    /// Copy elements `offset .. offset + dst.len()` into `dst`.
    ///
    /// ```
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let b = ctx.upload(&[1i64, 2, 3, 4])?;
    /// let mut two = [0i64; 2];
    /// b.copy_to_host_at(1, &mut two)?;
    /// assert_eq!(two, [2, 3]);
    /// # Ok(()) }
    /// ```
    pub fn copy_to_host_at(&self, offset: usize, dst: &mut [T]) -> Result<()> {
        if offset.checked_add(dst.len()).is_none_or(|end| end > self.len) {
            return Err(Error::LengthMismatch {
                what: "host slice past the buffer's end",
                expected: self.len.saturating_sub(offset),
                got: dst.len(),
            });
        }
        self.inner.download(&self.alloc, offset * std::mem::size_of::<T>(), as_bytes_mut(dst))
    }

    /// The buffer's contents as a `Vec`.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut v = vec![T::default(); self.len];
        self.copy_to_host(&mut v)?;
        Ok(v)
    }

    /// Fill every byte with `0xFF` (NaN for floats, all ones for integers),
    /// so that a kernel that fails to write an element is noticed.
    pub fn poison(&mut self) -> Result<()> {
        self.inner.fill_u32(&mut self.alloc, u32::MAX)
    }

    /// Set every byte to zero (stream-ordered), e.g. counters and flags
    /// that a kernel expects cleared.
    pub fn zero(&mut self) -> Result<()> {
        self.inner.fill_u32(&mut self.alloc, 0)
    }
}
