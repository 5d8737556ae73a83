//! Status storage of the single-pass launches (the scan's tickets and
//! decoupled look-back), kept zeroed between calls without a clearing
//! launch.
//!
//! A single-pass kernel needs its ticket counter and tile flags at zero
//! when it starts. Storage is split into two halves: a launch uses the
//! *ready* half, which is all zeros, and zeroes what earlier launches left
//! in the *other* half, for the next call (stream order makes the zeros
//! visible to it). So a call costs one launch, not a clearing launch and
//! then the scan; at 2^10..2^20 elements that second launch was about a
//! fifth of the call.
//!
//! The bookkeeping here is host-side: which half is ready, and how many
//! bytes of the other half the last launch dirtied (only those are cleared,
//! so a small call after a large one pays for the large one's status once,
//! and small calls after small ones clear a few words). Storage whose
//! history is unknown (new, or last used by another algorithm) is cleared
//! by a launch first, once.

use crate::context::Context;
use crate::error::Result;

/// Which half of double-buffered status storage is zeroed, and how much of
/// the other one is not.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Halves {
    /// The half that is all zeros, or `None` when unknown (both are then
    /// treated as dirty).
    ready: Option<usize>,
    /// Bytes at the start of the other half that may be non-zero.
    other_dirty: usize,
}

/// Where one single-pass launch keeps its status.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Region {
    /// The launch's status (`used` bytes, zeroed unless `clear_first`).
    pub temp: u64,
    /// Bytes of `temp` to clear with a separate launch first (0 normally).
    pub clear_first: usize,
    /// The other half, which the launch zeroes for the next call.
    pub spare: u64,
    /// Bytes of `spare` the launch must zero.
    pub spare_bytes: usize,
}

impl Halves {
    /// Both halves known to be zero (storage just filled with zeros).
    pub(crate) fn zeroed() -> Self {
        Halves { ready: Some(0), other_dirty: 0 }
    }

    /// Forget what is known: the storage served something else.
    pub(crate) fn invalidate(&mut self) {
        *self = Halves::default();
    }

    /// Run `launch` on the storage at `base` (two halves of `half` bytes,
    /// 16-byte aligned) with `used` bytes of status (at most `half`), and
    /// record what it leaves: the half it used dirty up to `used`, the other
    /// one zeroed. On an error nothing is known any more.
    pub(crate) fn run<R>(
        &mut self,
        base: u64,
        half: usize,
        used: usize,
        launch: impl FnOnce(Region) -> Result<R>,
    ) -> Result<R> {
        debug_assert!(used <= half && half.is_multiple_of(16));
        let (r, region) = match self.ready {
            Some(r) => (
                r,
                Region {
                    temp: base + (r * half) as u64,
                    clear_first: 0,
                    spare: base + ((1 - r) * half) as u64,
                    spare_bytes: self.other_dirty.min(half),
                },
            ),
            None => (0, Region { temp: base, clear_first: used, spare: base + half as u64, spare_bytes: half }),
        };
        match launch(region) {
            Ok(v) => {
                *self = Halves { ready: Some(1 - r), other_dirty: used };
                Ok(v)
            }
            Err(e) => {
                self.invalidate();
                Err(e)
            }
        }
    }
}

impl Context {
    /// Run a single-pass `launch` with `used` bytes of status in this
    /// stream's own double-buffered status storage (grown, and zeroed, when
    /// too small). Stream-ordered; the storage is only touched by
    /// single-pass launches, so no other call disturbs what is zeroed.
    pub(crate) fn with_status<R>(&self, used: usize, launch: impl FnOnce(Region) -> Result<R>) -> Result<R> {
        self.with_status_store(used, |base, half, halves| halves.run(base, half, used, launch))
    }
}
