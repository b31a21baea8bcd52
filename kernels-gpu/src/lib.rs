//! ferrocuda's kernels, one module per kernel family.
//!
//! This crate builds twice. For `nvptx64-nvidia-cuda` (driven by the workspace's `build.rs`) every
//! `#[kernel]` fn becomes a PTX entry of the same name. For the host it exposes only what host and
//! device must agree on: the ABI types in [`abi`], the launch geometry of each family, and one
//! launch marker per kernel, so a launcher cannot drift from the kernel it launches.
//!
//! # Kernel ABI
//!
#![doc = include_str!("../../docs/abi.md")]
//!
//! "Static `.shared`" is an array the module declares: the launcher passes no dynamic shared
//! memory for it. Each family's module declares its kernels' table (`KERNELS`: name, largest
//! block, the instructions its PTX must and must not contain), and [`FAMILIES`] lists the
//! families.
//!
//! The MLA entries come in fours: the unsplit kernel and its twins of split 2, 4 and 8, one
//! parameter list, the same bits (see [`mla`]); `split` in the grid is 1 for the unsplit entry.
//! [`mla::ServingTable`] picks the split per `t`.
//!
//! Every length is in elements of the scalar type (`ncols`, `n` in f32). `ncols` and `n` are
//! multiples of 32 (the q8_1 block); the host launchers refuse anything else before launching.
//! The q8_1 activation is two planes: `qs[n]` (i8) and `d[n / 32]` (f32). The numerics (the
//! saturation, zeros, NaN and infinities, an overflowing sum of squares) and why a row's outputs
//! do not depend on the batch are in [`norm_q8`]'s docs.
//! The gemv kernels take `m` such rows (`in_f` a multiple of 32, any `out_f`) and write
//! `y[m][out_f]`; see [`gemv`] for the formats, the thread mapping and the floating-point
//! operations both builds perform.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        abi_ptx,
        asm_experimental_arch,
        link_llvm_intrinsics,
        core_intrinsics,
        stdarch_nvptx,
        stmt_expr_attributes
    )
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

pub mod abi;
#[cfg(target_arch = "nvptx64")]
pub use ferrocuda_device as device;
pub mod gemv;
pub mod mla;
pub mod norm_q8;
pub mod stream;
pub mod swiglu;

pub use ferrocuda_abi::{kernel, variants};

/// Every family's kernel table, by family name: what the tests hold each kernel's PTX to. A new
/// family adds its module above and one line here.
#[cfg(not(target_arch = "nvptx64"))]
pub const FAMILIES: &[(&str, &[abi::KernelSpec])] = &[
    ("norm_q8", norm_q8::KERNELS),
    ("stream", stream::KERNELS),
    ("gemv", gemv::KERNELS),
    ("mla", mla::KERNELS),
    ("swiglu", swiglu::KERNELS),
];

/// Every kernel of every family.
#[cfg(not(target_arch = "nvptx64"))]
pub fn kernel_specs() -> impl Iterator<Item = &'static abi::KernelSpec> {
    FAMILIES.iter().flat_map(|(_, specs)| specs.iter())
}

/// The families whose kernels all begin with `chain_entry` (every family but the read stream,
/// which measures the bandwidth ceiling alone), so that the host may launch each as a
/// programmatic dependent of the stream's previous kernel.
#[cfg(not(target_arch = "nvptx64"))]
pub const CHAINED: &[&str] = &["norm_q8", "gemv", "mla", "swiglu"];

/// Every kernel of the [`CHAINED`] families.
#[cfg(not(target_arch = "nvptx64"))]
pub fn chained_specs() -> impl Iterator<Item = &'static abi::KernelSpec> {
    FAMILIES
        .iter()
        .filter(|(family, _)| CHAINED.contains(family))
        .flat_map(|(_, specs)| specs.iter())
}

/// Whether kernel `name` belongs to a [`CHAINED`] family.
#[cfg(not(target_arch = "nvptx64"))]
pub fn chained(name: &str) -> bool {
    chained_specs().any(|spec| spec.name == name)
}

/// The kernels of the [`CHAINED`] families that begin with `chain_wait` rather than
/// `chain_entry`: their dependents launch as their blocks exit. attn_flash's grid leaves SMs
/// idle, and a combine launched at its entry piles several blocks onto each of those, which then
/// finish last.
#[cfg(not(target_arch = "nvptx64"))]
pub const TRIGGER_AT_EXIT: &[&str] = &[
    <mla::flash::mla_attn_gathered_flash as abi::Kernel>::NAME,
    <mla::flash::mla_attn_gathered_flash_h32 as abi::Kernel>::NAME,
    <mla::flash::mla_attn_gathered_flash_h64 as abi::Kernel>::NAME,
    <mla::flash::wgmma::mla_attn_flash_wgmma_h16 as abi::Kernel>::NAME,
    <mla::flash::wgmma::mla_attn_flash_wgmma_h32 as abi::Kernel>::NAME,
    <mla::flash::wgmma::mla_attn_flash_wgmma_h64 as abi::Kernel>::NAME,
    <mla::flash::wgmma::mla_attn_flash_wgmma_rope_h16 as abi::Kernel>::NAME,
    <mla::flash::wgmma::mla_attn_flash_wgmma_rope_h32 as abi::Kernel>::NAME,
    <mla::flash::wgmma::mla_attn_flash_wgmma_rope_h64 as abi::Kernel>::NAME,
];

/// Whether kernel `name` is a GEMV entry, which triggers at entry like the others but waits for its
/// predecessor only once its first weight copies are issued (`chain_trigger`): no kernel before a
/// GEMV in a step writes its weights, and the activation is read after the wait.
#[cfg(not(target_arch = "nvptx64"))]
pub fn waits_after_weights(name: &str) -> bool {
    gemv::KERNELS.iter().any(|spec| spec.name == name)
}

/// Whether kernel `name` is one of [`TRIGGER_AT_EXIT`].
#[cfg(not(target_arch = "nvptx64"))]
pub fn triggers_at_exit(name: &str) -> bool {
    TRIGGER_AT_EXIT.contains(&name)
}

/// The first thing every kernel of the `CHAINED` families does, before any global memory
/// access. Triggering at entry lets the stream's next kernel, where it is launched as a
/// programmatic dependent, launch and place its blocks as soon as every block of this one has
/// started, so that its launch overlaps this kernel's run; the wait then keeps every read of the
/// predecessor's output, and every write, after the predecessor grid has finished (a kernel
/// launched plainly passes it at once). Below sm_90 both are nothing, and the host launches
/// plainly. The .cu twin is `chain_entry()` of `reference/chain.cuh`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) fn chain_entry() {
    chain_trigger();
    chain_wait();
}

/// `chain_entry` without the wait, for the GEMVs, which copy their first weights (which depend
/// on nothing a kernel before them writes) before they wait.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) fn chain_trigger() {
    device::launch_dependents();
}

/// `chain_entry` without the trigger, for the kernels of `TRIGGER_AT_EXIT`: a dependent launches
/// once every block of this one has exited. The .cu twin is `chain_wait()` of
/// `reference/chain.cuh`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) fn chain_wait() {
    device::grid_dependency_wait();
}

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // Kernels are written so that nothing can panic (raw pointers, no checked arithmetic); a
    // panic that slipped in still stops the grid rather than running on with garbage.
    device::trap()
}
