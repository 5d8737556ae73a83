//! Typed kernel families: how a primitive's plan finds its kernels.
//!
//! Every kernel instance carries its family, operator, key type, element
//! type and block size (see `gpuprim_kernels::entries!`). A plan names the
//! family and asks for the instance its types and block size need with
//! [`Family::get`], once per call, and launches what it got: no entry name
//! is built by formatting, and the block sizes a family offers come from
//! the table, not from parsing names.

use std::collections::HashMap;
use std::sync::OnceLock;

use gpuprim_kernels::HostKernel;

use crate::context::Context;
use crate::error::{Error, Result};

/// A kernel family (`scan_lookback`, `select_if`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Family(pub &'static str);

/// What an instance is made for: operator, key type and element type
/// names as in the entry names (`""` where the family has no such axis).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Instance {
    pub op: &'static str,
    pub key: &'static str,
    pub ty: &'static str,
}

impl Instance {
    /// An instance with an element type only.
    pub(crate) fn of(ty: &'static str) -> Self {
        Instance { op: "", key: "", ty }
    }
    /// With an operator.
    pub(crate) fn op(self, op: &'static str) -> Self {
        Instance { op, ..self }
    }
    /// With a key type.
    pub(crate) fn key(self, key: &'static str) -> Self {
        Instance { key, ..self }
    }
}

/// Family -> instance -> its kernels, ascending by block size. Built once;
/// a lookup is two hash probes and a scan of at most a handful of block
/// sizes (this is on the path of every call, so it must cost well under a
/// microsecond: the small calls take a few).
pub(crate) type Index = HashMap<&'static str, HashMap<Instance, Vec<&'static HostKernel>>>;

/// Add `kernels` to `index`, keeping each instance's list ascending by
/// block size.
pub(crate) fn add_to_index(index: &mut Index, kernels: impl IntoIterator<Item = &'static HostKernel>) {
    for k in kernels {
        let what = Instance { op: k.op, key: k.key, ty: k.ty };
        let list = index.entry(k.family).or_default().entry(what).or_default();
        list.push(k);
        list.sort_unstable_by_key(|k| k.block_size);
    }
}

fn shipped() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut index = Index::new();
        add_to_index(&mut index, gpuprim_kernels::host_kernels());
        index
    })
}

impl Family {
    /// The shipped instances of the family for `what`, ascending by block
    /// size.
    fn shipped(&self, what: Instance) -> &'static [&'static HostKernel] {
        shipped().get(self.0).and_then(|m| m.get(&what)).map_or(&[], Vec::as_slice)
    }

    /// The block sizes the family is instantiated at for `what`, shipped
    /// or loaded into `ctx` ([`Context::load_kernels`]), ascending.
    pub(crate) fn blocks(&self, ctx: &Context, what: Instance) -> Vec<u32> {
        let mut sizes: Vec<u32> = self.shipped(what).iter().map(|k| k.block_size).collect();
        ctx.with_user_index(|index| {
            if let Some(list) = index.get(self.0).and_then(|m| m.get(&what)) {
                sizes.extend(list.iter().map(|k| k.block_size));
            }
        });
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    }

    /// Whether an instance for `what` exists at `block`.
    pub(crate) fn has(&self, ctx: &Context, what: Instance, block: u32) -> bool {
        self.find(ctx, what, block).is_some()
    }

    /// The shipped instance first (no lock on that path), then the loaded.
    fn find(&self, ctx: &Context, what: Instance, block: u32) -> Option<&'static HostKernel> {
        if let Some(k) = self.shipped(what).iter().find(|k| k.block_size == block) {
            return Some(k);
        }
        ctx.with_user_index(|index| index.get(self.0)?.get(&what)?.iter().find(|k| k.block_size == block).copied())
    }

    /// The instance for `what` at `block`, shipped or loaded into `ctx`.
    /// Errors: [`Error::Unsupported`] when the family has no instance for
    /// `what` at all (naming `task`, what the caller asked for),
    /// [`Error::UnsupportedBlockSize`] listing the sizes it has when only
    /// the block size is missing.
    pub(crate) fn get(
        &self,
        ctx: &Context,
        what: Instance,
        block: u32,
        task: impl FnOnce() -> String,
    ) -> Result<&'static HostKernel> {
        if let Some(k) = self.find(ctx, what, block) {
            return Ok(k);
        }
        let sizes = self.blocks(ctx, what);
        if sizes.is_empty() {
            return Err(Error::Unsupported { what: task(), reason: self.not_instantiated(what) });
        }
        Err(Error::UnsupportedBlockSize {
            block,
            reason: format!("{} is instantiated for blocks of {sizes:?} threads", task()),
        })
    }

    /// Why there is no instance for `what`: none shipped, none loaded, and
    /// what would provide one.
    pub(crate) fn not_instantiated(&self, what: Instance) -> String {
        let mut of = vec![];
        for (part, name) in [("operator", what.op), ("key", what.key), ("type", what.ty)] {
            if !name.is_empty() {
                of.push(format!("{part} `{name}`"));
            }
        }
        format!(
            "no `{}` kernel is instantiated for {} (neither shipped nor loaded: an operator or type of your own \
             needs a kernels crate that instantiates this family for it, loaded with Context::load_kernels; \
             see gpuprim::user)",
            self.0,
            if of.is_empty() { "it".to_string() } else { of.join(", ") }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_find_instances_by_their_parts() {
        let ctx = Context::emulator();
        let f = Family("scan_lookback");
        let sum_i32 = Instance::of("i32").op("sum");
        assert!(f.blocks(&ctx, sum_i32).contains(&256));
        let k = f.get(&ctx, sum_i32, 256, || "scan".into()).unwrap();
        assert_eq!(k.name, "scan_lookback_sum_i32_b256");
        assert!(matches!(
            f.get(&ctx, sum_i32, 48, || "scan".into()),
            Err(Error::UnsupportedBlockSize { block: 48, .. })
        ));
        let missing = f.get(&ctx, Instance::of("i8").op("sum"), 256, || "scan".into());
        assert!(
            matches!(&missing, Err(Error::Unsupported { reason, .. }) if reason.contains("operator `sum`, type `i8`")),
            "{missing:?}"
        );
        let clear = Family("scan_clear").get(&ctx, Instance::of(""), 256, || "clear".into()).unwrap();
        assert_eq!(clear.name, "scan_clear_b256");
    }
}
