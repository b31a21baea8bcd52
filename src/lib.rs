//! ferrocuda's compiled kernels: the PTX module that `build.rs` builds from `kernels-gpu` (or,
//! without a PTX-capable toolchain, the blessed PTX of `ptx/blessed/` when the kernel sources
//! still match it), and the manifest that says how it was built.

/// The PTX module holding every kernel of `kernels-gpu`.
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// JSON: target, SM arch, `origin` (`source`: built by this build; `blessed`: the blessed PTX,
/// embedded without a PTX-capable toolchain), the toolchain and its versions that built the PTX,
/// kernel list, PTX sha256, and `sources_sha256` (the kernel sources and arch it was built from).
pub const MANIFEST: &str = include_str!(concat!(env!("OUT_DIR"), "/manifest.json"));

/// The SM target the PTX was built for (`FERROCUDA_ARCH` at build time), e.g. `sm_90`.
pub const ARCH: &str = env!("FERROCUDA_BUILT_ARCH");
