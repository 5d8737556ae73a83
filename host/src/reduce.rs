//! Device-wide reductions.
//!
//! A reduction runs in two launches of a block-reduce kernel: the first
//! folds the input into one partial per block, the second folds the
//! partials with a single block. The result stays in device memory until
//! it is read.

use crate::buffer::{DeviceBuffer, Scalar};
use crate::context::{Context, LaunchConfig};
use crate::error::Result;

/// Threads per block of the default reduction.
pub const DEFAULT_BLOCK: u32 = 256;
/// Blocks per multiprocessor of the default reduction's first launch.
const BLOCKS_PER_SM: u32 = 8;

impl Context {
    /// Sum of all elements (`0` for an empty buffer). Integer sums wrap on
    /// overflow; float sums are the same run to run (fixed launch shape and
    /// combine order).
    ///
    /// ```
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let v = ctx.upload(&[1.5f32, 2.0, -0.5])?;
    /// assert_eq!(ctx.sum(&v)?, 3.0);
    /// # Ok(()) }
    /// ```
    pub fn sum<T: Scalar>(&self, input: &DeviceBuffer<T>) -> Result<T> {
        let mut out = self.alloc::<T>(1)?;
        self.sum_into(input, &mut out)?;
        Ok(out.to_vec()?[0])
    }

    /// Stream-ordered sum into `out[0]`, without reading it back.
    pub fn sum_into<T: Scalar>(&self, input: &DeviceBuffer<T>, out: &mut DeviceBuffer<T>) -> Result<()> {
        self.reduce_into("reduce_shuffle", "sum", input, out)
    }

    pub(crate) fn reduce_into<T: Scalar>(
        &self,
        family: &str,
        op: &str,
        input: &DeviceBuffer<T>,
        out: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        if out.is_empty() {
            return Err(crate::Error::LengthMismatch { what: "reduction output", expected: 1, got: 0 });
        }
        let block = DEFAULT_BLOCK;
        let name = format!("{family}_{op}_{}_b{block}", T::NAME);
        let shared = block / 32 * std::mem::size_of::<T>() as u32;
        let n = input.len() as u64;
        let grid = n.div_ceil(block as u64).clamp(1, (self.multiprocessors() * BLOCKS_PER_SM) as u64) as u32;
        let partials = self.alloc::<T>(grid as usize)?;
        // SAFETY: `input` holds n elements, `partials` one per block, `out`
        // at least one; the kernel touches nothing else.
        unsafe {
            self.launch(&name, LaunchConfig { grid, block, shared_bytes: shared }, &[input.arg(), n.into(), partials.arg()])?;
            self.launch(
                &name,
                LaunchConfig { grid: 1, block, shared_bytes: shared },
                &[partials.arg(), (grid as u64).into(), out.arg()],
            )?;
        }
        Ok(())
    }
}
