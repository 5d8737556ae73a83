//! Transform-reduce ([`Map`]), reductions of any element type ([`Fold`])
//! and the one-pass pairs built on them (min-max, argmin-argmax): one
//! kernel family, `reduce_map`, for every pass.

use super::{Finish, Inputs, Kernels, Layout, Op, Post, ReduceAlgorithm, ReduceTemp, Reducer};
use crate::buffer::{DeviceInput, DeviceOutput, DeviceRepr, DeviceSlice, DeviceSliceMut, Scalar};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::kernel::{Family, Instance};
use gpuprim_kernels::ops::{Fold, Item, Map, Monoid, Named};
use gpuprim_kernels::reduce::mapped::{ArgExtremes, ArgMinMax, Combine, Extremes, MinMax};

/// The family every transform-reduce runs.
const FAMILY: Family = Family("reduce_map");

/// Why a [`Map`] cannot be used, checked when the call compiles: its
/// bytes travel as two 8-byte kernel parameters.
struct Fits<M>(std::marker::PhantomData<M>);
impl<M> Fits<M> {
    const STATE: () = assert!(std::mem::size_of::<M>() <= 16, "a Map is passed to its kernel in at most 16 bytes");
}

/// A map's bytes as the kernel's two state parameters.
fn state_words<M: bytemuck::NoUninit>(map: &M) -> [u64; 2] {
    let () = Fits::<M>::STATE;
    let mut words = [0u64; 2];
    let bytes = bytemuck::bytes_of(map);
    bytemuck::bytes_of_mut(&mut words)[..bytes.len()].copy_from_slice(bytes);
    words
}

impl Context {
    /// Transform-reduce with the default settings
    /// ([`Reducer::transform_reduce`]): every element `x[i]` becomes
    /// `map.map(x[i], i)`, and those values combine by the map's operator,
    /// in one pass over the input.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// use gpuprim::reduce::{Extremes, MinMax};
    /// let x = ctx.upload(&[3i32, -7, 12, 5]).unwrap();
    /// assert_eq!(ctx.transform_reduce(&x, MinMax).unwrap(), Extremes { min: -7, max: 12 });
    /// ```
    pub fn transform_reduce<T, M>(&self, x: impl DeviceInput<T>, map: M) -> Result<M::Out>
    where
        T: DeviceRepr,
        M: Map<T> + bytemuck::NoUninit,
        M::Out: DeviceRepr,
    {
        self.reducer().transform_reduce(x, map)
    }

    /// Stream-ordered [`Context::transform_reduce`] into `out[0]`.
    pub fn transform_reduce_into<T, M>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        map: M,
        out: &mut (impl DeviceOutput<M::Out> + ?Sized),
    ) -> Result<()>
    where
        T: DeviceRepr,
        M: Map<T> + bytemuck::NoUninit,
        M::Out: DeviceRepr,
    {
        self.reducer().transform_reduce_into(x, map, out)
    }

    /// Reduce elements of any type, your own included, with operator `op`
    /// ([`Reducer::reduce_with`]): the identity for empty input.
    pub fn reduce_with<T, Op>(&self, x: impl DeviceInput<T>, op: Op) -> Result<T>
    where
        T: DeviceRepr + Item,
        Op: Monoid<T> + Named,
    {
        self.reducer().reduce_with(x, op)
    }

    /// The smallest and the largest element, in one pass (`None` for empty
    /// input); NaNs are ignored unless all elements are NaN.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// let x = ctx.upload(&[2.5f32, -1.0, 9.0, 0.0]).unwrap();
    /// assert_eq!(ctx.min_max(&x).unwrap(), Some((-1.0, 9.0)));
    /// ```
    pub fn min_max<T: Scalar>(&self, x: impl DeviceInput<T>) -> Result<Option<(T, T)>>
    where
        Extremes<T>: DeviceRepr,
    {
        self.reducer().min_max(x)
    }

    /// The first index of the smallest and of the largest element, with
    /// the elements, in one pass (`None` for empty input); as
    /// [`argmin`](Context::argmin) and [`argmax`](Context::argmax).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// let x = ctx.upload(&[4u16, 1, 9, 1, 9]).unwrap();
    /// assert_eq!(ctx.argmin_argmax(&x).unwrap(), Some(((1, 1), (2, 9))));
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn argmin_argmax<T: Scalar>(&self, x: impl DeviceInput<T>) -> Result<Option<((usize, T), (usize, T))>>
    where
        ArgExtremes<T::Wide>: DeviceRepr,
    {
        self.reducer().argmin_argmax(x)
    }
}

impl<'c> Reducer<'c> {
    /// Transform-reduce: every element `x[i]` becomes `map.map(x[i], i)`
    /// (a [`Map`]: built in, [`MinMax`] and [`ArgMinMax`], or one of yours
    /// loaded with [`Context::load_kernels`]), and those values combine by
    /// `M::Op` into one. The map runs as the input is loaded, so the input
    /// is read once; the result is `M::Op`'s identity for empty input.
    ///
    /// The map is passed to the kernel by value (its bytes, at most 16):
    /// a threshold or a centre in it is read at run time. Every
    /// [`Finish`] works; the reduction's kernel is
    /// `reduce_map_<NAME>_<type>_b<block>` (with
    /// [`ReduceAlgorithm::Vectorized`], the only algorithm it has).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// use gpuprim::reduce::{ArgMinMax, Finish};
    /// let x = ctx.upload(&[0.5f64, -2.0, 7.0, -2.0]).unwrap();
    /// let e = ctx.reducer().finish(Finish::Relaunch).transform_reduce(&x, ArgMinMax).unwrap();
    /// assert_eq!((e.min.index, e.min.value, e.max.index, e.max.value), (1, -2.0, 2, 7.0));
    /// ```
    pub fn transform_reduce<T, M>(&self, x: impl DeviceInput<T>, map: M) -> Result<M::Out>
    where
        T: DeviceRepr,
        M: Map<T> + bytemuck::NoUninit,
        M::Out: DeviceRepr,
    {
        let x = x.input(self.ctx)?;
        if self.finish != Finish::Atomic {
            let got = self.ctx.read_back::<M::Out>(|out| self.map_views(x.view, map, out, None))?;
            if let Some(v) = got {
                return Ok(v);
            }
        }
        let mut out = self.ctx.alloc::<M::Out>(1)?;
        self.map_views(x.view, map, out.as_slice_mut(), None)?;
        let mut v = [M::Out::default()];
        out.copy_to_host(&mut v)?;
        Ok(v[0])
    }

    /// Stream-ordered [`transform_reduce`](Reducer::transform_reduce) into
    /// `out[0]`.
    pub fn transform_reduce_into<T, M>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        map: M,
        out: &mut (impl DeviceOutput<M::Out> + ?Sized),
    ) -> Result<()>
    where
        T: DeviceRepr,
        M: Map<T> + bytemuck::NoUninit,
        M::Out: DeviceRepr,
    {
        let x = x.input(self.ctx)?;
        let mut out = out.output(self.ctx)?;
        self.map_views(x.view, map, out.view.reborrow(), None)
    }

    /// [`transform_reduce_into`](Reducer::transform_reduce_into) with
    /// caller-provided temporary storage ([`Reducer::temp`] for `T`).
    pub fn transform_reduce_with_temp<T, M>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        map: M,
        out: &mut (impl DeviceOutput<M::Out> + ?Sized),
        temp: &mut ReduceTemp,
    ) -> Result<()>
    where
        T: DeviceRepr,
        M: Map<T> + bytemuck::NoUninit,
        M::Out: DeviceRepr,
    {
        let x = x.input(self.ctx)?;
        let mut out = out.output(self.ctx)?;
        self.ctx.check_domain(temp.buf.context().domain(), "reduction temporary storage")?;
        self.map_views(x.view, map, out.view.reborrow(), Some(temp))
    }

    /// Reduce elements of any [`Item`] type (your own `#[repr(C)]` structs
    /// of up to 32 bytes, declared with `gpuprim_kernels::device_type!`)
    /// with `op`, an associative and commutative [`Monoid`]: the
    /// transform-reduce of [`Fold`]`<Op>`, whose kernels your kernels crate
    /// instantiates (`ops [<NAME> = Fold<YourOp>] types [YourType]`; see
    /// [`crate::user`]). The identity for empty input.
    pub fn reduce_with<T, Op>(&self, x: impl DeviceInput<T>, _op: Op) -> Result<T>
    where
        T: DeviceRepr + Item,
        Op: Monoid<T> + Named,
    {
        self.transform_reduce(x, Fold::<Op>::new())
    }

    /// Stream-ordered [`reduce_with`](Reducer::reduce_with) into `out[0]`.
    pub fn reduce_with_into<T, Op>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        _op: Op,
        out: &mut (impl DeviceOutput<T> + ?Sized),
    ) -> Result<()>
    where
        T: DeviceRepr + Item,
        Op: Monoid<T> + Named,
    {
        self.transform_reduce_into(x, Fold::<Op>::new(), out)
    }

    /// [`reduce_with_into`](Reducer::reduce_with_into) with caller-provided
    /// temporary storage ([`Reducer::temp`] for `T`).
    pub fn reduce_with_temp<T, Op>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        _op: Op,
        out: &mut (impl DeviceOutput<T> + ?Sized),
        temp: &mut ReduceTemp,
    ) -> Result<()>
    where
        T: DeviceRepr + Item,
        Op: Monoid<T> + Named,
    {
        self.transform_reduce_with_temp(x, Fold::<Op>::new(), out, temp)
    }

    /// [`Context::min_max`] with these options.
    pub fn min_max<T: Scalar>(&self, x: impl DeviceInput<T>) -> Result<Option<(T, T)>>
    where
        Extremes<T>: DeviceRepr,
    {
        let x = x.input(self.ctx)?;
        if x.view.is_empty() {
            return Ok(None);
        }
        let e = self.transform_reduce(&x.view, MinMax)?;
        Ok(Some((e.min, e.max)))
    }

    /// [`Context::argmin_argmax`] with these options.
    #[allow(clippy::type_complexity)]
    pub fn argmin_argmax<T: Scalar>(&self, x: impl DeviceInput<T>) -> Result<Option<((usize, T), (usize, T))>>
    where
        ArgExtremes<T::Wide>: DeviceRepr,
    {
        let x = x.input(self.ctx)?;
        let x = &x.view;
        if x.is_empty() {
            return Ok(None);
        }
        let e = self.transform_reduce(x, ArgMinMax)?;
        // The accumulator holds the values widened: read the elements back
        // exactly.
        let at = |i: u64| -> Result<(usize, T)> {
            let mut one = [T::default()];
            x.copy_to_host_at(self.ctx, i as usize, &mut one)?;
            Ok((i as usize, one[0]))
        };
        Ok(Some((at(e.min.index)?, at(e.max.index)?)))
    }

    /// Every form's path: check, look the kernel up, then queue the passes
    /// in `temp` or in the context's scratch storage.
    fn map_views<T, M>(
        &self,
        x: DeviceSlice<'_, T>,
        map: M,
        out: DeviceSliceMut<'_, M::Out>,
        temp: Option<&mut ReduceTemp>,
    ) -> Result<()>
    where
        T: DeviceRepr,
        M: Map<T> + bytemuck::NoUninit,
        M::Out: DeviceRepr,
    {
        type R<M, T> = Combine<<M as Map<T>>::Out, <M as Map<T>>::Op>;
        if out.is_empty() {
            return Err(Error::LengthMismatch { what: "reduction output", expected: 1, got: 0 });
        }
        if self.algorithm != ReduceAlgorithm::Vectorized {
            return Err(Error::Unsupported {
                what: format!("ReduceAlgorithm::{:?} for the transform-reduce `{}`", self.algorithm, M::NAME),
                reason: "maps run in the default kernel only (ReduceAlgorithm::Vectorized)".into(),
            });
        }
        let words = state_words(&map);
        let n = x.len() as u64;
        let plan = self.plan(n, std::mem::size_of::<T>())?;
        let what = Instance::of(T::NAME).op(M::NAME);
        let kernel = FAMILY.get(self.ctx, what, self.block, String::new).map_err(|_| {
            let blocks = FAMILY.blocks(self.ctx, what);
            if blocks.is_empty() {
                Error::Unsupported {
                    what: format!("`{}` on {}", M::NAME, T::NAME),
                    reason: FAMILY.not_instantiated(what),
                }
            } else {
                Error::UnsupportedBlockSize {
                    block: self.block,
                    reason: format!("`{}` on {} is instantiated for blocks of {blocks:?} threads", M::NAME, T::NAME),
                }
            }
        })?;
        let k = Kernels { op: Op::Custom(M::NAME), input: T::NAME, partials: <M::Out as DeviceRepr>::NAME };
        if self.finish == Finish::Atomic {
            self.check_atomic::<R<M, T>>(k)?;
        }
        let layout = Layout::of(&plan);
        let names = vec![kernel.name; plan.len()];
        let inputs = Inputs::Mapped { words };
        self.in_temp(&layout, temp, |base| {
            self.launches::<R<M, T>>(&plan, &names, base, &layout, x.arg(), inputs, n, out.addr(), Post::None)
        })
    }
}
