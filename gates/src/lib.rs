//! ferrocuda's gates: each compares the Rust kernels with their reference CUDA C++ builds,
//! bit for bit, against CPU oracles, and side by side in time.
//!
//! [`harness`] is the runner every gate shares; [`families`] holds what is particular to each
//! kernel family.

pub mod families;
pub mod harness;
pub mod peers;
pub mod ptx;
pub mod report;
pub mod rng;
pub mod sysinfo;
