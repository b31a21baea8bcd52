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
        stdarch_nvptx
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

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // Kernels are written so that nothing can panic (raw pointers, no checked arithmetic); a
    // panic that slipped in still stops the grid rather than running on with garbage.
    device::trap()
}
