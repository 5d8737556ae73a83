//! Block scope: collectives of the `B` threads of a block over any
//! [`Monoid`](crate::ops::Monoid), and moving tiles between global and
//! shared memory.
//!
//! | module | what |
//! |---|---|
//! | [`scan`] | exclusive scan of one value per thread, with the block total |
//! | [`reduce`] | reduction of one value per thread (commutative operators) |
//! | [`tile`] | `B x ITEMS` tiles: striped coalesced loads into shared memory with an out-of-bounds fill value, the blocked per-thread view, and the way back (the striped/blocked exchange) |
//!
//! Each is built on [`crate::warp`]; every thread of the block calls
//! them (they contain barriers).

pub mod reduce;
pub mod scan;
pub mod tile;

pub use scan::WARP_SLOTS;
