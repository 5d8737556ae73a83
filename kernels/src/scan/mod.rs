//! Scans: block-level (Hillis-Steele, Blelloch, warp shuffles) and
//! device-level (three-phase, single-pass with tickets, decoupled
//! look-back).
//!
//! | scope  | technique | kernel family | file |
//! |--------|-----------|---------------|------|
//! | warp   | Kogge-Stone with `shfl.sync.up` | — | [`crate::warp::inclusive_scan`] |
//! | block  | Hillis-Steele, double-buffered, `O(n log n)` | `scan_hillis_steele` | [`lectures::scan::block::hillis_steele`] |
//! | block  | Blelloch up-/down-sweep, padded, `O(n)` | `scan_blelloch` | [`lectures::scan::block::blelloch`] |
//! | block  | warp scans + scan of warp totals | `scan_warp_shuffle` | [`crate::block::scan::exclusive_scan`] |
//! | device | three phases on `B x ITEMS` tiles | `scan_tiles` + `scan_add_prefix` | [`lectures::scan::three_phase`] |
//! | device | single pass, in-order tickets | `scan_tickets` | [`lectures::scan::tickets`] |
//! | device | single pass, decoupled look-back | `scan_lookback` | [`lookback`] (the default) |
//!
//! The default, [`lookback`], lives here; the textbook variants live in
//! [`crate::lectures::scan`] and are built from the same warp, block and
//! single-pass layers.
//!
//! The block-level scans run device-wide as the phase-1 kernel of the
//! three-phase scan (one tile per block), so each can be tested and timed
//! end to end; the host (`gpuprim::scan`) picks the kernels and does the
//! recursion. What was measured and tried for the device-wide scans:
//! `docs/tuning/scan.md`.
//!
//! **Order.** Every kernel combines in input order, `combine(earlier,
//! later)`, so any associative [`Monoid`] works,
//! commutative or not (see [`affine::Compose`]).
//!
//! **Semantics.** With `init` (passed as bytes, see [`to_words`]) and
//! `x[0..n]`: inclusive `out[i] = init . x[0] . ... . x[i]`, exclusive
//! `out[i] = init . x[0] . ... . x[i-1]` (so `out[0] = init`). The host
//! passes the identity as `init` for an inclusive scan. `input` may equal
//! `output`.
//!
//! **User-defined operators.** Kernels are compiled to PTX ahead of time,
//! so an operator needs an instantiation in some kernels crate: implement
//! [`Monoid`] (associativity is all a scan needs) and
//! [`Named`] for it, and instantiate `scan_lookback`
//! for it with [`entries!`](crate::entries), either in the
//! `scan_entries!` list below (shipped) or in a kernels crate of your own
//! that `gpuprim::Context::load_kernels` loads (see `gpuprim::user`).
//!
//! [`Monoid`]: crate::ops::Monoid

pub mod affine;
pub mod lookback;
pub mod policy;

use crate::block::{WARP_SLOTS, tile};
use crate::gpu::Shared;
use crate::lectures;
use crate::single_pass::{LookBackSmem, look_back_smem_bytes};
use core::mem::size_of;

pub use crate::ops::Item;
pub use crate::single_pass::status;
pub use crate::single_pass::{from_words, to_words};
pub use policy::{lookback_items, tile_items, tile_len};

/// `mode` bit: exclusive scan (else inclusive).
pub const EXCLUSIVE: u32 = 1;

/// Elements of input one phase-1 block of `family` covers at block size
/// `b`: `b` for Hillis-Steele and warp shuffles, `2b` for Blelloch, `b *
/// tile_items::<T>()` for tiles and tickets, `b * lookback_items::<T>(b)`
/// for look-back. `None` for an
/// unknown family.
pub const fn block_tile<T>(family: &str, b: u32) -> Option<u64> {
    match family.as_bytes() {
        b"scan_hillis_steele" | b"scan_warp_shuffle" => Some(b as u64),
        b"scan_blelloch" => Some(2 * b as u64),
        b"scan_tiles" | b"scan_tickets" => Some(tile_len::<T>(b)),
        b"scan_lookback" => Some(b as u64 * lookback_items::<T>(b) as u64),
        _ => None,
    }
}

const fn round16(b: usize) -> usize {
    b.div_ceil(16) * 16
}

/// Dynamic shared memory (bytes) of a `family` kernel at block size `b`.
/// `None` for an unknown family.
pub const fn smem_bytes<T>(family: &str, b: u32) -> Option<usize> {
    let s = size_of::<T>();
    match family.as_bytes() {
        b"scan_hillis_steele" => Some(round16(lectures::scan::block::hillis_steele_slots(b) * s)),
        b"scan_blelloch" => Some(round16(lectures::scan::block::blelloch_slots(b) * s)),
        b"scan_warp_shuffle" => Some(round16(WARP_SLOTS * s)),
        b"scan_tiles" => Some(round16((tile::tile_slots::<T>(b, tile_items::<T>()) + WARP_SLOTS) * s)),
        b"scan_tickets" => Some(single_pass_smem_bytes::<T>(b, tile_items::<T>())),
        b"scan_lookback" => Some(single_pass_smem_bytes::<T>(b, lookback_items::<T>(b))),
        b"scan_add_prefix" => Some(0),
        _ => None,
    }
}

/// Dynamic shared memory of the single-pass kernels at block size `b`
/// with `items` per thread: the tile, the warp totals, and the look-back's
/// ([`LookBackSmem`]).
pub const fn single_pass_smem_bytes<T>(b: u32, items: usize) -> usize {
    round16((tile::tile_slots::<T>(b, items) + WARP_SLOTS) * size_of::<T>() + look_back_smem_bytes::<T>())
}

/// The single-pass scans' shared memory, carved: the staged tile, the
/// block scan's warp slots, the look-back's.
pub(crate) struct SinglePassSmem<T> {
    pub(crate) tile: Shared<T>,
    pub(crate) warps: Shared<T>,
    pub(crate) look: LookBackSmem<T>,
}

impl<T: Item> SinglePassSmem<T> {
    #[inline(always)]
    pub(crate) fn carve(b: u32, items: usize) -> Self {
        let tile = Shared::<T>::dynamic();
        let warps = tile.after::<T>(tile::tile_slots::<T>(b, items));
        let look = LookBackSmem::carve(warps.after::<T>(WARP_SLOTS));
        SinglePassSmem { tile, warps, look }
    }
}

#[allow(unused_imports)]
use crate::ops::*;
#[allow(unused_imports)]
use affine::{Affine, Compose, affine_f32, affine_f64, affine_u16, affine_u32, recurrence_maps, recurrence_values};
use lookback::scan_lookback;
use status::clear_words;

scan_entries! {
    scan_lookback(input: *const T, output: *mut T, n: u64, init_lo: u64, init_hi: u64, mode: u32, temp: *mut u64, spare: *mut u64, spare_words: u64)
        => scan_lookback::<T, Op, {B}, { lookback_items::<T>(B) }>; sum_blocks [32, 64, 128, 256, 512];
        f64_blocks [32, 64, 128, 256, 512];
    ;
    scan_clear(p: *mut u64, words: u64) => clear_words::<{B}>; blocks [256];
    recurrence_maps(l: *const T, u: *const T, maps: *mut Affine<T>, n: u64) => recurrence_maps::<T, {B}>;
        types [f32, f64] blocks [256];
    recurrence_values(maps: *const Affine<T>, out: *mut T, n: u64) => recurrence_values::<T, {B}>;
        types [f32, f64] blocks [256];
    // Small tiles of a non-commutative operator, so the tests can make
    // the look-back cross many windows (32 threads: one warp per
    // window) and combine several warps of a window (64 threads).
    scan_lookback(input: *const T, output: *mut T, n: u64, init_lo: u64, init_hi: u64, mode: u32, temp: *mut u64, spare: *mut u64, spare_words: u64)
        => scan_lookback::<T, Op, {B}, { lookback_items::<T>(B) }>;
        ops [compose = Compose] types [affine_u32] blocks [32, 64];
}
