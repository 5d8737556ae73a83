//! The cases, one file per primitive. A primitive joins the bench with one
//! line in [`GROUPS`] (its name on the command line and in the files, and
//! the functions that list its cases).

use crate::{Case, Group};
use data::DataCase;

mod by_key;
pub(crate) mod data;
mod reduce;
mod scan;
mod segmented;
mod select;

pub(crate) use reduce::latency_case;

/// A group of cases and where they come from: cases on the shared random
/// inputs of each type and size (`cases`), or with inputs of their own
/// (`data_cases`, see [`data`]).
pub(crate) struct GroupDef {
    pub group: Group,
    pub cases: fn() -> Vec<Case>,
    pub data_cases: fn() -> Vec<DataCase>,
}

/// Every group, in the order `all` runs them.
pub(crate) const GROUPS: &[GroupDef] = &[
    GroupDef { group: Group::REDUCE, cases: reduce::cases, data_cases: Vec::new },
    GroupDef { group: Group::SCAN, cases: scan::cases, data_cases: Vec::new },
    GroupDef { group: Group("select"), cases: Vec::new, data_cases: select::data_cases },
    GroupDef { group: Group("by_key"), cases: Vec::new, data_cases: by_key::data_cases },
    GroupDef { group: Group("segmented"), cases: Vec::new, data_cases: segmented::data_cases },
];

/// The group named `name`.
pub(crate) fn find(name: &str) -> Option<&'static GroupDef> {
    GROUPS.iter().find(|g| g.group.name() == name)
}
