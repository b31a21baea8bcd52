//! ferrocuda's compiled kernels: the PTX modules that `build.rs` builds from `kernels-gpu`, one per
//! SM target (or,
//! without a PTX-capable toolchain, the blessed PTX of `ptx/blessed/` when the kernel sources
//! still match it), and the manifest that says how it was built.

/// The PTX module holding every kernel of `kernels-gpu`.
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// JSON: target, SM arch, `origin` (`source`: built by this build; `blessed`: the blessed PTX,
/// embedded without a PTX-capable toolchain), the toolchain and its versions that built the PTX,
/// kernel list, PTX sha256, and `sources_sha256` (the kernel sources and arch it was built from).
pub const MANIFEST: &str = include_str!(concat!(env!("OUT_DIR"), "/manifest.json"));

/// The SM target the PTX was built for (`FERROCUDA_ARCH` at build time), e.g. `sm_90`: the
/// primary module's, which the PTX tools and the golden PTX read.
pub const ARCH: &str = env!("FERROCUDA_BUILT_ARCH");

/// Every SM target's module (`FERROCUDA_ARCHS`, by default sm_80, sm_86, sm_89, sm_90, sm_100
/// and sm_120; the primary among them), in ascending arch order: the host loads the one that
/// fits the device (`host::module_arch`).
pub const MODULES: &[PtxModule] = include!(concat!(env!("OUT_DIR"), "/modules.rs"));

pub use ferrocuda_abi::PtxModule;
