//! The PTX commands `gates ptx-diff`, `gates ptx-report` and `gates ptx-snapshot`: the builds
//! they compare (this project's, its reference .cu's, snapshots and git revisions) and how a
//! comparison is shown. The parsing, ptxas and diffing underneath are `ptx_tools`.

pub mod builds;
pub mod revs;
pub mod show;
