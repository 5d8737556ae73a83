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
pub(crate) struct Instance<'a> {
    pub op: &'a str,
    pub key: &'a str,
    pub ty: &'a str,
}

impl<'a> Instance<'a> {
    /// An instance with an element type only.
    pub(crate) fn of(ty: &'a str) -> Self {
        Instance { op: "", key: "", ty }
    }
    /// With an operator.
    pub(crate) fn op(self, op: &'a str) -> Self {
        Instance { op, ..self }
    }
    /// With a key type.
    pub(crate) fn key(self, key: &'a str) -> Self {
        Instance { key, ..self }
    }
}

fn by_family() -> &'static HashMap<&'static str, Vec<&'static HostKernel>> {
    static INDEX: OnceLock<HashMap<&'static str, Vec<&'static HostKernel>>> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut index: HashMap<&'static str, Vec<&'static HostKernel>> = HashMap::new();
        for k in gpuprim_kernels::host_kernels() {
            index.entry(k.family).or_default().push(k);
        }
        index
    })
}

impl Family {
    /// Every instance of the family for `what`, at any block size.
    fn instances<'s>(&self, what: Instance<'s>) -> impl Iterator<Item = &'static HostKernel> + 's {
        by_family()
            .get(self.0)
            .into_iter()
            .flatten()
            .copied()
            .filter(move |k| k.op == what.op && k.key == what.key && k.ty == what.ty)
    }

    /// The block sizes the family is instantiated at for `what`, ascending.
    pub(crate) fn blocks(&self, what: Instance<'_>) -> Vec<u32> {
        let mut b: Vec<u32> = self.instances(what).map(|k| k.block_size).collect();
        b.sort_unstable();
        b
    }

    /// Whether an instance for `what` exists at `block`.
    pub(crate) fn has(&self, what: Instance<'_>, block: u32) -> bool {
        self.instances(what).any(|k| k.block_size == block)
    }

    /// The instance for `what` at `block`. Errors: [`Error::Unsupported`]
    /// when the family has no instance for `what` at all (naming `task`,
    /// what the caller asked for), [`Error::UnsupportedBlockSize`] listing
    /// the sizes it has when only the block size is missing.
    pub(crate) fn get(&self, what: Instance<'_>, block: u32, task: impl FnOnce() -> String) -> Result<&'static HostKernel> {
        if let Some(k) = self.instances(what).find(|k| k.block_size == block) {
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
