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
type Index = HashMap<&'static str, HashMap<Instance, Vec<&'static HostKernel>>>;

fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut index = Index::new();
        for k in gpuprim_kernels::host_kernels() {
            let what = Instance { op: k.op, key: k.key, ty: k.ty };
            index.entry(k.family).or_default().entry(what).or_default().push(k);
        }
        for kernels in index.values_mut().flat_map(|m| m.values_mut()) {
            kernels.sort_unstable_by_key(|k| k.block_size);
        }
        index
    })
}

impl Family {
    /// Every instance of the family for `what`, ascending by block size.
    fn instances(&self, what: Instance) -> &'static [&'static HostKernel] {
        index().get(self.0).and_then(|m| m.get(&what)).map_or(&[], Vec::as_slice)
    }

    /// The block sizes the family is instantiated at for `what`, ascending.
    pub(crate) fn blocks(&self, what: Instance) -> Vec<u32> {
        self.instances(what).iter().map(|k| k.block_size).collect()
    }

    /// Whether an instance for `what` exists at `block`.
    pub(crate) fn has(&self, what: Instance, block: u32) -> bool {
        self.instances(what).iter().any(|k| k.block_size == block)
    }

    /// The instance for `what` at `block`. Errors: [`Error::Unsupported`]
    /// when the family has no instance for `what` at all (naming `task`,
    /// what the caller asked for), [`Error::UnsupportedBlockSize`] listing
    /// the sizes it has when only the block size is missing.
    pub(crate) fn get(&self, what: Instance, block: u32, task: impl FnOnce() -> String) -> Result<&'static HostKernel> {
        if let Some(k) = self.instances(what).iter().find(|k| k.block_size == block) {
            return Ok(k);
        }
        let sizes = self.blocks(what);
        if sizes.is_empty() {
            return Err(Error::Unsupported {
                what: task(),
                reason: format!("no `{}` kernel is instantiated for it", self.0),
            });
        }
        Err(Error::UnsupportedBlockSize {
            block,
            reason: format!("{} is instantiated for blocks of {sizes:?} threads", task()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_find_instances_by_their_parts() {
        let f = Family("scan_lookback");
        let sum_i32 = Instance::of("i32").op("sum");
        assert!(f.blocks(sum_i32).contains(&256));
        let k = f.get(sum_i32, 256, || "scan".into()).unwrap();
        assert_eq!(k.name, "scan_lookback_sum_i32_b256");
        assert!(matches!(f.get(sum_i32, 48, || "scan".into()), Err(Error::UnsupportedBlockSize { block: 48, .. })));
        assert!(matches!(f.get(Instance::of("i8").op("sum"), 256, || "scan".into()), Err(Error::Unsupported { .. })));
        let clear = Family("scan_clear").get(Instance::of(""), 256, || "clear".into()).unwrap();
        assert_eq!(clear.name, "scan_clear_b256");
    }
}
