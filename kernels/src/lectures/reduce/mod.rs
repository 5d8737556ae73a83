//! The reduction lectures: variants 1-8, one file per technique, each
//! adding one optimisation to the one before. Variant 9, the library's
//! default, is [`crate::reduce::vectorized`]; see [`crate::reduce`] for the
//! table of all nine.

pub mod cascaded;
pub mod interleaved;
pub mod sequential;
pub mod unrolled;
pub mod volatile_tail;

pub use cascaded::{reduce_cascaded, reduce_shuffle};
pub use interleaved::{reduce_interleaved, reduce_interleaved_strided};
pub use sequential::{reduce_first_add, reduce_sequential, reduce_unrolled_warp};
pub use unrolled::reduce_complete_unroll;

use crate::gpu::{FULL_MASK, Shared, warp};
#[allow(unused_imports)]
use crate::ops::*;
#[allow(unused_imports)]
use crate::reduce::reduction::*;
use volatile_tail::reduce_volatile_tail;

/// Reduce the last 64 slots of a shared-memory tree with one warp, the
/// lectures' "unrolled last warp", made correct without lockstep: each
/// step reads both operands, waits at a warp barrier, then writes, and
/// waits again before the next step reads. The total lands in `s[0]`.
///
/// Call from the 32 threads of warp 0 only, with `s[0..2 * start]` filled;
/// `start` is 32, or 16 for a block of 32 threads.
#[inline(always)]
pub fn warp_tail<R: Reduction>(s: Shared<R::Acc>, tid: usize, start: u32) {
    let mut off = start as usize;
    while off > 0 {
        // SAFETY: lanes past the live range read the identity-free upper
        // half only while `tid + off < 2 * start` slots; others idle.
        unsafe {
            let v =
                if tid + off < 2 * start as usize { R::combine(s.load(tid), s.load(tid + off)) } else { R::identity() };
            warp::sync(FULL_MASK);
            s.store(tid, v);
            warp::sync(FULL_MASK);
        }
        off /= 2;
    }
}

/// One `entries!` list for the lecture variants 1-8: `sum` at every block
/// size, the other operators at 256, for the six 4- and 8-byte element
/// types.
macro_rules! reduce_kernels {
    ($($fam:ident => $func:ident;)*) => {
        entries! {
            $(
            $fam(a: *const <Op as Reduction>::In, b: *const <Op as Reduction>::In, n: u64,
                 partials: *mut <Op as Reduction>::Acc, out: *mut <Op as Reduction>::Acc,
                 counter: *mut u32, mode: u32) => $func::<Op, {B}>;
                ops [sum = Plain<T, Sum>]
                types [i32, u32, i64, u64, f32, f64]
                blocks [32, 64, 128, 256, 512, 1024];
            $fam(a: *const <Op as Reduction>::In, b: *const <Op as Reduction>::In, n: u64,
                 partials: *mut <Op as Reduction>::Acc, out: *mut <Op as Reduction>::Acc,
                 counter: *mut u32, mode: u32) => $func::<Op, {B}>;
                ops [product = Plain<T, Product>, min = Plain<T, Min>, max = Plain<T, Max>,
                     dot = Dot<T>, sumabs = SumAbs<T>, sumsq = SumSquares<T>,
                     argmin = Arg<T, Smallest>, argmax = Arg<T, Largest>]
                types [i32, u32, i64, u64, f32, f64]
                blocks [256];
            $fam(a: *const <Op as Reduction>::In, b: *const <Op as Reduction>::In, n: u64,
                 partials: *mut <Op as Reduction>::Acc, out: *mut <Op as Reduction>::Acc,
                 counter: *mut u32, mode: u32) => $func::<Op, {B}>;
                ops [argminp = ArgPartials<T, Smallest>, argmaxp = ArgPartials<T, Largest>]
                types [i64, u64, f64]
                blocks [256];
            $fam(a: *const <Op as Reduction>::In, b: *const <Op as Reduction>::In, n: u64,
                 partials: *mut <Op as Reduction>::Acc, out: *mut <Op as Reduction>::Acc,
                 counter: *mut u32, mode: u32) => $func::<Op, {B}>;
                ops [and = Plain<T, BitAnd>, or = Plain<T, BitOr>, xor = Plain<T, BitXor>]
                types [i32, u32, i64, u64]
                blocks [256];
            )*
            reduce_volatile_tail(input: *const T, n: u64, out: *mut T) => reduce_volatile_tail::<T, Op, {B}>;
                ops [sum = Sum] types [i32] blocks [256];

        }
    };
}

reduce_kernels! {
    reduce_interleaved => reduce_interleaved;
    reduce_interleaved_strided => reduce_interleaved_strided;
    reduce_sequential => reduce_sequential;
    reduce_first_add => reduce_first_add;
    reduce_unrolled_warp => reduce_unrolled_warp;
    reduce_complete_unroll => reduce_complete_unroll;
    reduce_cascaded => reduce_cascaded;
    reduce_shuffle => reduce_shuffle;
}
