//! The single-pass layer: per-tile status, tickets and the decoupled
//! look-back, shared by every kernel that makes one pass over its input
//! and needs, per tile, the combine of everything before it (the scan,
//! select/partition/unique, reduce-by-key, run-length encode, scan by
//! key).
//!
//! A single-pass kernel is written as:
//!
//! ```text
//! let status = TileStatus::<A>::new(temp);            // A: the aggregate's monoid value
//! let tile   = status.take_ticket(smem.ticket);       // tiles in start order (progress)
//! ... load the tile, reduce it to `aggregate` ...
//! publish_aggregate(&status, tile, aggregate);         // thread 0
//! let before = exclusive_prefix::<A, Op, B, DELAY_NS, POLL_NS>(&status, tile, aggregate, &smem);
//! ... finish the tile with `before` ...
//! ```
//! A kernel whose tiles live long may first ask L2 for the tile of its
//! block index ([`crate::block::tile::prefetch_tile`]): the ticket's
//! round trip (about 0.7 µs) then overlaps the tile's first fetch, since
//! most tickets equal their block's index or a near one. Each primitive's
//! policy says where it pays (`docs/tuning/scan.md`, "The ticket's round
//! trip"); loading the guessed tile itself, and reloading on a miss, was
//! slower everywhere.
//!
//! The status storage must be zero before the launch
//! ([`status::status_bytes`] for the tile count); a launch may zero the
//! other half of double-buffered storage for the next one
//! ([`status::clear_words`]).

pub mod look_back;
pub mod status;

pub use look_back::{
    deferred_prefix, exclusive_prefix, exclusive_prefix_by_warp, look_back, look_back_by_warp, publish_aggregate,
};
pub use status::{
    AGGREGATE, INVALID, PREFIX, SLEEP_MIN_BLOCKS, TileStatus, clear_words, from_words, status_bytes, to_words,
};

use crate::gpu::Shared;
use crate::ops::Item;
use core::mem::size_of;

/// The shared memory of the look-back: two sets of 32 warp totals
/// (`slots`), one `prefix` value, two sets of 32 flags and nearest-PREFIX
/// positions, and the block's ticket.
#[derive(Clone, Copy)]
pub struct LookBackSmem<T> {
    /// 64 values of `T` for the look-back's warp totals.
    pub slots: Shared<T>,
    /// One value of `T`, for kernels that hand a prefix from thread 0 to
    /// the block.
    pub prefix: Shared<T>,
    /// 64 flags.
    pub flags: Shared<u32>,
    /// 64 nearest-PREFIX positions.
    pub near: Shared<i32>,
    /// The block's ticket.
    pub ticket: Shared<u32>,
}

/// Bytes a [`LookBackSmem<T>`] takes, starting at an address aligned for
/// `T`.
pub const fn look_back_smem_bytes<T>() -> usize {
    (2 * 32 + 1) * size_of::<T>() + (4 * 32 + 1) * 4
}

impl<T: Item> LookBackSmem<T> {
    /// Carve it from `start`, which is aligned for `T` (and for `u32`).
    #[inline(always)]
    pub fn carve(start: Shared<T>) -> Self {
        let slots = start;
        let prefix = slots.after::<T>(2 * 32);
        // After whole elements of T (aligned for T), so aligned for u32.
        let flags = prefix.after::<u32>(1);
        let near = flags.after::<i32>(2 * 32);
        let ticket = near.after::<u32>(2 * 32);
        LookBackSmem { slots, prefix, flags, near, ticket }
    }
}
