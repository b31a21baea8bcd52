//! ferrocuda's compiled kernels: the PTX module that `build.rs` builds from `kernels-gpu`, and
//! the manifest that says how it was built.

/// The PTX module holding every kernel of `kernels-gpu`.
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// JSON: target, SM arch, toolchain and versions, kernel list, PTX sha256.
pub const MANIFEST: &str = include_str!(concat!(env!("OUT_DIR"), "/manifest.json"));

/// The SM target the PTX was built for (`FERROCUDA_ARCH` at build time), e.g. `sm_90`.
pub const ARCH: &str = env!("FERROCUDA_BUILT_ARCH");
