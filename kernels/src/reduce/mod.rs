//! Reductions: every variant of the classic reduction lectures, one file per
//! technique, plus the block- and warp-scope building blocks they share.
//!
//! Each kernel reduces its slice of the input to one value per block and
//! writes it to `out[block_idx]`; the host finishes the grid (see
//! `gpuprim::reduce`).

pub mod block;
pub mod shuffle;
pub mod volatile_tail;

use crate::ops::*;
use shuffle::reduce_shuffle;
use volatile_tail::reduce_volatile_tail;

entries! {
    reduce_shuffle(input: *const T, n: u64, out: *mut T) => reduce_shuffle::<T, Op, {B}>;
        ops [sum = Sum] types [f32, i32] blocks [256];
    reduce_volatile_tail(input: *const T, n: u64, out: *mut T) => reduce_volatile_tail::<T, Op, {B}>;
        ops [sum = Sum] types [i32] blocks [256];
}
