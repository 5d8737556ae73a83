//! The cases, one file per primitive. A primitive joins the bench with one
//! line in [`GROUPS`] (its name on the command line and in the files, and
//! the function that lists its cases).

use crate::{Case, Group};

mod reduce;
mod scan;

pub(crate) use reduce::latency_case;

/// A group of cases and where they come from.
pub(crate) struct GroupDef {
    pub group: Group,
    pub cases: fn() -> Vec<Case>,
}

/// Every group, in the order `all` runs them.
pub(crate) const GROUPS: &[GroupDef] =
    &[GroupDef { group: Group::REDUCE, cases: reduce::cases }, GroupDef { group: Group::SCAN, cases: scan::cases }];

/// The group named `name`.
pub(crate) fn find(name: &str) -> Option<&'static GroupDef> {
    GROUPS.iter().find(|g| g.group.name() == name)
}
