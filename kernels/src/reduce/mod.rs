//! Reductions: the default kernel ([`vectorized`]), what a reduction
//! computes ([`reduction`]) and how blocks hand their totals on
//! ([`finish`]). The lecture variants 1-8 are in
//! [`crate::lectures::reduce`], built from the same pieces.
//!
//! | variant | kernel | technique it adds |
//! |---|---|---|
//! | 1 | [`reduce_interleaved`](crate::lectures::reduce::reduce_interleaved) | tree in shared memory, `tid % (2s) == 0` (divergent) |
//! | 2 | [`reduce_interleaved_strided`](crate::lectures::reduce::reduce_interleaved_strided) | `index = 2 s tid`: no divergence, bank conflicts |
//! | 3 | [`reduce_sequential`](crate::lectures::reduce::reduce_sequential) | stride halves from `B/2`: conflict-free |
//! | 4 | [`reduce_first_add`](crate::lectures::reduce::reduce_first_add) | two loads and an add per thread: half the blocks |
//! | 5 | [`reduce_unrolled_warp`](crate::lectures::reduce::reduce_unrolled_warp) | last warp without block barriers (warp-synchronous, made safe) |
//! | 6 | [`reduce_complete_unroll`](crate::lectures::reduce::reduce_complete_unroll) | block size as a const generic: every step unrolled |
//! | 7 | [`reduce_cascaded`](crate::lectures::reduce::reduce_cascaded) | many elements per thread, grid sized to the GPU |
//! | 8 | [`reduce_shuffle`](crate::lectures::reduce::reduce_shuffle) | warp shuffles, one shared slot per warp |
//! | 9 | [`reduce_vectorized`] | 16-byte vector loads, several in flight (the default) |
//!
//! [`mapped::reduce_map`] is variant 9 with a user [`Map`]
//! applied to each element as it is loaded (transform-reduce), for any
//! element and accumulator type (min-max and argmin-argmax in one pass are
//! built in).
//!
//! Every kernel takes `(a, b, n, partials, out, counter, mode)`: inputs `a`
//! (and `b` for two-input reductions such as the dot product), the length,
//! one partial per block, the result, a zeroed counter, and how the block
//! hands on its total ([`finish::mode`]). What is reduced is a
//! [`reduction::Reduction`]: a monoid and a way to load element `i`.
//!
//! Entry names: `{kernel}_{op}_{type}_b{block}`, e.g.
//! `reduce_sequential_sum_f32_b256`. The default, [`reduce_vectorized`], is
//! instantiated for every operator and every element type at block sizes
//! 32 ..= 1024. The lecture variants 1-8 take `i32`, `u32`, `i64`, `u64`,
//! `f32` and `f64`: `sum` at every block size, the other operators at 256.
//! Sums, products, dot products and sums of squares of the 8- and 16-bit
//! types accumulate in a wider type (see [`crate::ops`]). Partials of
//! argmin/argmax (`argminp`, `argmaxp`) depend only on the value's 8-byte
//! [`Element::Wide`] type, so they exist for
//! `i64`, `u64` and `f64` alone and the other types' partials use those.

pub mod finish;
pub mod mapped;
pub mod policy;
pub mod reduction;
pub mod vectorized;

pub use vectorized::reduce_vectorized;

#[allow(unused_imports)]
use crate::ops::*;
#[allow(unused_imports)]
use mapped::*;
#[allow(unused_imports)]
use reduction::*;

// The default, every operator, every element type where the operator
// makes sense (bitwise for integers, the L1 norm for floats), every block
// size.
entries! {
    reduce_vectorized(a: *const <Op as Reduction>::In, b: *const <Op as Reduction>::In, n: u64,
         partials: *mut <Op as Reduction>::Acc, out: *mut <Op as Reduction>::Acc,
         counter: *mut u32, mode: u32) => reduce_vectorized::<Op, {B}>;
        ops [sum = Plain<T, Sum>, product = Plain<T, Product>, min = Plain<T, Min>,
             max = Plain<T, Max>, dot = Dot<T>, sumsq = SumSquares<T>,
             argmin = Arg<T, Smallest>, argmax = Arg<T, Largest>]
        types [i8, u8, i16, u16, i32, u32, i64, u64, f16, bf16, f32, f64]
        blocks [32, 64, 128, 256, 512, 1024];
    reduce_vectorized(a: *const <Op as Reduction>::In, b: *const <Op as Reduction>::In, n: u64,
         partials: *mut <Op as Reduction>::Acc, out: *mut <Op as Reduction>::Acc,
         counter: *mut u32, mode: u32) => reduce_vectorized::<Op, {B}>;
        ops [sumabs = SumAbs<T>]
        types [f16, bf16, f32, f64]
        blocks [32, 64, 128, 256, 512, 1024];
    reduce_vectorized(a: *const <Op as Reduction>::In, b: *const <Op as Reduction>::In, n: u64,
         partials: *mut <Op as Reduction>::Acc, out: *mut <Op as Reduction>::Acc,
         counter: *mut u32, mode: u32) => reduce_vectorized::<Op, {B}>;
        ops [and = Plain<T, BitAnd>, or = Plain<T, BitOr>, xor = Plain<T, BitXor>]
        types [i8, u8, i16, u16, i32, u32, i64, u64]
        blocks [32, 64, 128, 256, 512, 1024];
    reduce_vectorized(a: *const <Op as Reduction>::In, b: *const <Op as Reduction>::In, n: u64,
         partials: *mut <Op as Reduction>::Acc, out: *mut <Op as Reduction>::Acc,
         counter: *mut u32, mode: u32) => reduce_vectorized::<Op, {B}>;
        ops [argminp = ArgPartials<T, Smallest>, argmaxp = ArgPartials<T, Largest>]
        types [i64, u64, f64]
        blocks [32, 64, 128, 256, 512, 1024];
    // Transform-reduce: min and max, argmin and argmax, each pair in one
    // pass (every pass of a reduction is the same kernel).
    reduce_map(a: *const T, s0: u64, s1: u64, n: u64, partials: *mut <Op as Map<T>>::Out,
         out: *mut <Op as Map<T>>::Out, counter: *mut u32, mode: u32) => reduce_map::<T, Op, {B}>;
        ops [minmax = MinMax, argminmax = ArgMinMax]
        types [i8, u8, i16, u16, i32, u32, i64, u64, f16, bf16, f32, f64]
        blocks [256];
}
