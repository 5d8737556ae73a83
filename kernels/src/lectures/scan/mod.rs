//! The textbook scans: three block-level scans (Hillis-Steele, Blelloch,
//! warp shuffles) run device-wide as the first phase of the three-phase
//! scan, the three-phase scan on register tiles, and the single-pass scan
//! with in-order tickets. The default scan, the decoupled look-back, is
//! [`crate::scan::lookback`]; see [`crate::scan`] for the table of all of
//! them.

pub mod block;
pub mod three_phase;
pub mod tickets;

#[allow(unused_imports)]
use crate::ops::*;
#[allow(unused_imports)]
use crate::scan::affine::{Compose, affine_f32, affine_f64, affine_u16, affine_u32};
use crate::scan::tile_items;
use three_phase::{add_prefix, scan_blelloch, scan_hillis_steele, scan_tiles, scan_warp_shuffle};
use tickets::scan_tickets;

scan_entries! {
    scan_hillis_steele(input: *const T, output: *mut T, n: u64, init_lo: u64, init_hi: u64, mode: u32, totals: *mut T)
        => scan_hillis_steele::<T, Op, {B}>; sum_blocks [32, 64, 128, 256, 512, 1024]; f64_blocks [256];
    scan_blelloch(input: *const T, output: *mut T, n: u64, init_lo: u64, init_hi: u64, mode: u32, totals: *mut T)
        => scan_blelloch::<T, Op, {B}>; sum_blocks [32, 64, 128, 256, 512, 1024]; f64_blocks [256];
    scan_warp_shuffle(input: *const T, output: *mut T, n: u64, init_lo: u64, init_hi: u64, mode: u32, totals: *mut T)
        => scan_warp_shuffle::<T, Op, {B}>; sum_blocks [32, 64, 128, 256, 512, 1024]; f64_blocks [256];
    scan_tiles(input: *const T, output: *mut T, n: u64, init_lo: u64, init_hi: u64, mode: u32, totals: *mut T)
        => scan_tiles::<T, Op, {B}, { tile_items::<T>() }>; sum_blocks [32, 64, 128, 256, 512]; f64_blocks [256];
    scan_tickets(input: *const T, output: *mut T, n: u64, init_lo: u64, init_hi: u64, mode: u32, temp: *mut u64, spare: *mut u64, spare_words: u64)
        => scan_tickets::<T, Op, {B}, { tile_items::<T>() }>; sum_blocks [32, 64, 128, 256, 512]; f64_blocks [256];
    ;
    scan_add_prefix(output: *mut T, n: u64, tile: u64, prefixes: *const T) => add_prefix::<T, Op, {B}>;
        ops [sum = Sum, product = Product, min = Min, max = Max] types [i32, u32, i64, u64, f32, f64] blocks [256];
    scan_add_prefix(output: *mut T, n: u64, tile: u64, prefixes: *const T) => add_prefix::<T, Op, {B}>;
        ops [and = BitAnd, or = BitOr, xor = BitXor] types [i32, u32, i64, u64] blocks [256];
    scan_add_prefix(output: *mut T, n: u64, tile: u64, prefixes: *const T) => add_prefix::<T, Op, {B}>;
        ops [compose = Compose] types [affine_u16, affine_u32, affine_f32, affine_f64] blocks [256];
}
