//! ferrocuda's gates: each compares the Rust kernels with their reference CUDA C++ builds,
//! bit for bit, against CPU oracles, and side by side in time.

pub mod compare;
pub mod inputs;
pub mod oracle;
pub mod ptx;
pub mod q8_fuse;
pub mod report;
pub mod rng;
pub mod sysinfo;
pub mod timing;
