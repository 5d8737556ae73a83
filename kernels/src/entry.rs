//! Kernel entry points: one list, two targets.
//!
//! [`entries!`] instantiates generic kernel functions for every combination of
//! operator, key type, element type and block size it is given (each axis
//! but the block size optional), and names each instance
//! `{family}[_{op}][_{key}][_{type}]_b{block}` (`reduce_shuffle_sum_f32_b256`,
//! `scan_clear_b256`).
//!
//! * On nvptx64 each instance is a `#[no_mangle] extern "ptx-kernel"` function
//!   of that name, so the PTX module exports it.
//! * On the host each instance is a [`host::HostKernel`]: the same name, the
//!   kinds of its parameters and a plain function that decodes launch
//!   arguments and calls the same generic kernel. The CPU emulator launches it
//!   by name; the CUDA backend uses the parameter kinds to check arguments.

/// Instantiate kernel families; see the module docs.
///
/// ```ignore
/// entries! {
///     reduce_shuffle(input: *const T, n: u64, out: *mut T) => shuffle::<T, Op, {B}>;
///         ops [sum = Sum, max = Max] types [f32, i32] blocks [128, 256];
///     reduce_by_key(keys: *const K, values: *const T, ...) => by_key::<K, T, Op, {B}>;
///         ops [sum = Sum] keys [u32, u64] types [i32, f32] blocks [256];
///     util_fill_hash(out: *mut T, n: u64, seed: u64) => fill_hash::<T, {B}>;
///         types [i32, f32] blocks [256];
///     scan_clear(p: *mut u64, words: u64) => clear_words::<{B}>;
///         blocks [256];
/// }
/// ```
/// Each line names a family, its parameters and the generic function an
/// instance calls, then the axes it is instantiated over: operators
/// (`ops`, optional), key types (`keys`, optional; with or without `ops`),
/// element types (`types`, optional) and block sizes. Inside the argument
/// list and generics, `Op`, `K`, `T` and `B` name the instance's operator,
/// key type, element type and block size. The instance is named
/// `{family}[_{op}][_{key}][_{type}]_b{block}`.
///
/// **From a kernels crate of your own**, the same list instantiates this
/// crate's generic kernels for your operators: a `#![no_std]` crate with
/// `#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]` and, for its
/// host half, `#[cfg(not(target_arch = "nvptx64"))] extern crate std;`.
/// Each list expands to the PTX entries on nvptx64 (build them with
/// `gpuprim-builder`) and, on the host, to a `pub fn register(&mut
/// Vec<HostKernel>)` that appends the instances for the emulator.
///
/// ```ignore
/// gpuprim_kernels::entries! {
///     reduce_vectorized(a: *const <Op as Reduction>::In, b: *const <Op as Reduction>::In, n: u64,
///          partials: *mut <Op as Reduction>::Acc, out: *mut <Op as Reduction>::Acc,
///          counter: *mut u32, mode: u32) => reduce_vectorized::<Op, {B}>;
///         ops [maxabs = Plain<T, MaxAbs>] types [i32] blocks [256];
/// }
/// ```
#[macro_export]
macro_rules! entries {
    // One line at a time, each brought to four bracketed axes: an absent
    // axis is a single empty group, so every instance has the same shape.
    (@lines $mode:tt; ) => {};
    (@lines $mode:tt; $fam:ident $args:tt => $func:ident :: < $($g:tt),* > ;
        ops [$($op:ident = $Op:ty),* $(,)?] keys [$($K:ident),* $(,)?] types [$($T:ident),* $(,)?] blocks $blocks:tt ;
        $($rest:tt)*
    ) => {
        $crate::entries!(@ops $mode, $fam $args, $func [$($g),*], [$(($op = $Op)),*], [$(($K)),*], [$(($T)),*], $blocks);
        $crate::entries!(@lines $mode; $($rest)*);
    };
    (@lines $mode:tt; $fam:ident $args:tt => $func:ident :: < $($g:tt),* > ;
        ops [$($op:ident = $Op:ty),* $(,)?] types [$($T:ident),* $(,)?] blocks $blocks:tt ;
        $($rest:tt)*
    ) => {
        $crate::entries!(@ops $mode, $fam $args, $func [$($g),*], [$(($op = $Op)),*], [()], [$(($T)),*], $blocks);
        $crate::entries!(@lines $mode; $($rest)*);
    };
    (@lines $mode:tt; $fam:ident $args:tt => $func:ident :: < $($g:tt),* > ;
        keys [$($K:ident),* $(,)?] types [$($T:ident),* $(,)?] blocks $blocks:tt ;
        $($rest:tt)*
    ) => {
        $crate::entries!(@ops $mode, $fam $args, $func [$($g),*], [()], [$(($K)),*], [$(($T)),*], $blocks);
        $crate::entries!(@lines $mode; $($rest)*);
    };
    (@lines $mode:tt; $fam:ident $args:tt => $func:ident :: < $($g:tt),* > ;
        types [$($T:ident),* $(,)?] blocks $blocks:tt ;
        $($rest:tt)*
    ) => {
        $crate::entries!(@ops $mode, $fam $args, $func [$($g),*], [()], [()], [$(($T)),*], $blocks);
        $crate::entries!(@lines $mode; $($rest)*);
    };
    (@lines $mode:tt; $fam:ident $args:tt => $func:ident :: < $($g:tt),* > ;
        blocks $blocks:tt ;
        $($rest:tt)*
    ) => {
        $crate::entries!(@ops $mode, $fam $args, $func [$($g),*], [()], [()], [()], $blocks);
        $crate::entries!(@lines $mode; $($rest)*);
    };
    (@ops $mode:tt, $fam:ident $args:tt, $func:ident $gs:tt, [$($op:tt),*], $keys:tt, $types:tt, $blocks:tt) => {
        $( $crate::entries!(@keys $mode, $fam $args, $func $gs, $op, $keys, $types, $blocks); )*
    };
    (@keys $mode:tt, $fam:ident $args:tt, $func:ident $gs:tt, $op:tt, [$($key:tt),*], $types:tt, $blocks:tt) => {
        $( $crate::entries!(@types $mode, $fam $args, $func $gs, $op, $key, $types, $blocks); )*
    };
    (@types $mode:tt, $fam:ident $args:tt, $func:ident $gs:tt, $op:tt, $key:tt, [$($ty:tt),*], $blocks:tt) => {
        $( $crate::entries!(@blocks $mode, $fam $args, $func $gs, $op, $key, $ty, $blocks); )*
    };
    (@blocks $mode:tt, $fam:ident $args:tt, $func:ident $gs:tt, $op:tt, $key:tt, $ty:tt, [$($B:literal),* $(,)?]) => {
        $( $crate::entries!(@one $mode, $fam $args, $func $gs, $op, $key, $ty, $B); )*
    };
    (@one ptx, $fam:ident ( $($a:ident : $aty:ty),* $(,)? ), $func:ident [$($g:tt),*],
        ( $($op:ident = $Op:ty)? ), ( $($K:ident)? ), ( $($T:ident)? ), $B:literal) => {
        // One module per instance gives the aliases `Op`, `K`, `T`, `B` a scope.
        $crate::__private::paste::paste! {
            mod [<$fam $(_ $op)? $(_ $K)? $(_ $T)? _b $B>] {
                use super::*;
                $( type T = $T; )?
                $( type K = $K; )?
                $( type Op = $Op; )?
                const B: u32 = $B;
                #[unsafe(no_mangle)]
                pub unsafe extern "ptx-kernel" fn [<$fam $(_ $op)? $(_ $K)? $(_ $T)? _b $B>]($($a: $aty),*) {
                    // SAFETY: the launcher passes arguments of the declared kinds.
                    unsafe { $func::<$($g),*>($($a),*) }
                }
            }
        }
    };
    (@one $out:ident, $fam:ident ( $($a:ident : $aty:ty),* $(,)? ), $func:ident [$($g:tt),*],
        ( $($op:ident = $Op:ty)? ), ( $($K:ident)? ), ( $($T:ident)? ), $B:literal) => {{
        $( #[allow(dead_code)] type T = $T; )?
        $( #[allow(dead_code)] type K = $K; )?
        $( #[allow(dead_code)] type Op = $Op; )?
        #[allow(dead_code)]
        const B: u32 = $B;
        unsafe fn host_entry(args: &[$crate::Arg]) {
            let mut it = args.iter();
            // SAFETY: the emulator checked the argument kinds against `params`.
            unsafe {
                $func::<$($g),*>($(<$aty as $crate::KernelParam>::from_arg(it.next())),*)
            }
        }
        $out.push($crate::HostKernel {
            name: $crate::__private::paste::paste!(stringify!([<$fam $(_ $op)? $(_ $K)? $(_ $T)? _b $B>])),
            family: stringify!($fam),
            op: concat!("" $(, stringify!($op))?),
            key: concat!("" $(, stringify!($K))?),
            ty: concat!("" $(, stringify!($T))?),
            params: &[$(<$aty as $crate::KernelParam>::KIND),*],
            block_size: $B,
            func: host_entry,
        });
    }};
    // The entry point (last, so that the `@` arms above match first).
    ($($body:tt)*) => {
        #[cfg(target_arch = "nvptx64")]
        #[allow(non_snake_case, dead_code)]
        mod __entries {
            use super::*;
            $crate::entries!(@lines ptx; $($body)*);
        }

        /// Append this module's kernel instances to a host-side table (the
        /// emulator's, and the argument checks of the CUDA backend).
        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(unused_variables)]
        pub fn register(out: &mut ::std::vec::Vec<$crate::HostKernel>) {
            $crate::entries!(@lines out; $($body)*);
        }
    };
}

/// Host-side description of kernels and launch arguments.
#[cfg(not(target_arch = "nvptx64"))]
pub mod host {
    use core::fmt;

    /// The kind of one kernel parameter.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum ParamKind {
        /// A device pointer (64-bit address).
        Ptr,
        U32,
        I32,
        U64,
        I64,
        F32,
        F64,
    }

    impl fmt::Display for ParamKind {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let s = match self {
                ParamKind::Ptr => "pointer",
                ParamKind::U32 => "u32",
                ParamKind::I32 => "i32",
                ParamKind::U64 => "u64",
                ParamKind::I64 => "i64",
                ParamKind::F32 => "f32",
                ParamKind::F64 => "f64",
            };
            f.write_str(s)
        }
    }

    /// One launch argument, by value.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum Arg {
        /// A device address.
        Ptr(u64),
        U32(u32),
        I32(i32),
        U64(u64),
        I64(i64),
        F32(f32),
        F64(f64),
    }

    impl Arg {
        /// The kind of this argument.
        pub fn kind(&self) -> ParamKind {
            match self {
                Arg::Ptr(_) => ParamKind::Ptr,
                Arg::U32(_) => ParamKind::U32,
                Arg::I32(_) => ParamKind::I32,
                Arg::U64(_) => ParamKind::U64,
                Arg::I64(_) => ParamKind::I64,
                Arg::F32(_) => ParamKind::F32,
                Arg::F64(_) => ParamKind::F64,
            }
        }
    }

    macro_rules! arg_from {
        ($($t:ty => $kind:ident),*) => {$(
            impl From<$t> for Arg {
                fn from(v: $t) -> Arg { Arg::$kind(v) }
            }
        )*};
    }
    arg_from!(u32 => U32, i32 => I32, u64 => U64, i64 => I64, f32 => F32, f64 => F64);

    /// A Rust type that can be a kernel parameter.
    pub trait KernelParam {
        const KIND: ParamKind;
        /// Decode an argument already checked to be of kind [`Self::KIND`].
        fn from_arg(arg: Option<&Arg>) -> Self;
    }

    macro_rules! scalar_param {
        ($t:ty, $kind:ident) => {
            impl KernelParam for $t {
                const KIND: ParamKind = ParamKind::$kind;
                fn from_arg(arg: Option<&Arg>) -> Self {
                    match arg {
                        Some(Arg::$kind(v)) => *v,
                        other => mismatch(stringify!($kind), other),
                    }
                }
            }
        };
    }
    scalar_param!(u32, U32);
    scalar_param!(i32, I32);
    scalar_param!(u64, U64);
    scalar_param!(i64, I64);
    scalar_param!(f32, F32);
    scalar_param!(f64, F64);

    impl<T> KernelParam for *const T {
        const KIND: ParamKind = ParamKind::Ptr;
        fn from_arg(arg: Option<&Arg>) -> Self {
            match arg {
                Some(Arg::Ptr(p)) => *p as usize as *const T,
                other => mismatch("Ptr", other),
            }
        }
    }
    impl<T> KernelParam for *mut T {
        const KIND: ParamKind = ParamKind::Ptr;
        fn from_arg(arg: Option<&Arg>) -> Self {
            match arg {
                Some(Arg::Ptr(p)) => *p as usize as *mut T,
                other => mismatch("Ptr", other),
            }
        }
    }

    #[cold]
    fn mismatch(want: &str, got: Option<&Arg>) -> ! {
        // Unreachable through the emulator, which checks kinds first.
        panic!("kernel argument mismatch: expected {want}, got {got:?}")
    }

    /// A kernel as the host sees it.
    #[derive(Clone, Copy)]
    pub struct HostKernel {
        /// The PTX entry name: `{family}[_{op}][_{key}][_{ty}]_b{block_size}`.
        pub name: &'static str,
        /// The kernel family (`scan_lookback`).
        pub family: &'static str,
        /// The operator's name in the entry name (`sum`), or `""`.
        pub op: &'static str,
        /// The key type (`u64`), or `""`.
        pub key: &'static str,
        /// The element type (`f32`, `affine_u32`), or `""`.
        pub ty: &'static str,
        /// Parameter kinds, in order.
        pub params: &'static [ParamKind],
        /// The block size the kernel was instantiated for; launches must use it.
        pub block_size: u32,
        /// The kernel body on the host (for the emulator).
        pub func: unsafe fn(&[Arg]),
    }

    impl fmt::Debug for HostKernel {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("HostKernel")
                .field("name", &self.name)
                .field("family", &self.family)
                .field("params", &self.params)
                .field("block_size", &self.block_size)
                .finish()
        }
    }
}

/// [`entries!`] for scan-like families, each instantiated for every scan
/// operator and element type: `sum` on `i32` and `f32` at the block sizes
/// of `sum_blocks` (`sum` on `f64` at those of `f64_blocks`), the other
/// operators and types at 256 threads. After a `;`, more [`entries!`]
/// lines of the module's own.
macro_rules! scan_entries {
    (
        $( $fam:ident $args:tt => $func:ident :: < $($g:tt),* > ; sum_blocks $sum_blocks:tt ; f64_blocks $f64_blocks:tt ; )*
        ;
        $($rest:tt)*
    ) => {
        entries! {
            $(
            $fam $args => $func::<$($g),*>;
                ops [sum = Sum] types [i32, f32] blocks $sum_blocks;
            $fam $args => $func::<$($g),*>;
                ops [sum = Sum] types [f64] blocks $f64_blocks;
            $fam $args => $func::<$($g),*>;
                ops [sum = Sum] types [u32, i64, u64] blocks [256];
            $fam $args => $func::<$($g),*>;
                ops [product = Product, min = Min, max = Max] types [i32, u32, i64, u64, f32, f64] blocks [256];
            $fam $args => $func::<$($g),*>;
                ops [and = BitAnd, or = BitOr, xor = BitXor] types [i32, u32, i64, u64] blocks [256];
            $fam $args => $func::<$($g),*>;
                ops [compose = Compose] types [affine_u16, affine_u32, affine_f32, affine_f64] blocks [256];
            )*
            $($rest)*
        }
    };
}

/// `$body` for each `$k` in `0..$n` (`$n` at most 16; each `$k` a literal),
/// written out with no loop. LLVM leaves a 16-iteration loop with a large
/// body rolled, and then the arrays it indexes go to local memory (a stack
/// frame); written out, every index is a constant and they stay in
/// registers.
macro_rules! unrolled {
    ($n:expr, |$k:ident| $body:expr) => {
        unrolled!(@ $n, $k, $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    (@ $n:expr, $k:ident, $body:expr; $($i:literal)*) => {{
        const { assert!($n <= 16) };
        $( if $i < $n { let $k: usize = $i; $body; } )*
    }};
}
