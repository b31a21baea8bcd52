//! The host side of a kernel crate outside ferrocuda's own, as a user of the toolkit writes it:
//! the PTX that `build.rs` built from `user-kernels-gpu` with `ferrocuda-builder`, the crate as
//! the host loads it ([`KERNELS`]: that PTX and its .cu twin), a checked launcher over
//! `host::Module`'s typed launch, and its gate on the gates' harness ([`gate`]).
//!
//! ```no_run
//! use host::{Gpu, Module};
//!
//! fn main() -> Result<(), host::Error> {
//!     let gpu = Gpu::new(0)?;
//!     let arch = host::module_arch(&gpu)?; // the module that fits the device
//!     let module = Module::rust_of(&gpu, &[user_kernels::KERNELS], arch)?;
//!     let x = gpu.upload(&[1.0f32, 2.0, 3.0])?;
//!     let y = gpu.upload(&[4.0f32, 5.0, 6.0])?;
//!     let mut z = gpu.alloc_poisoned::<f32>(3, 0xff)?;
//!     user_kernels::axpby(&module, &gpu, &x, &y, &mut z, 2.0, 0.5)?;
//!     assert_eq!(gpu.download(&z)?, [4.0, 6.5, 9.0]);
//!     Ok(())
//! }
//! ```

pub mod gate;

use ferrocuda_abi::Kernel;
use host::check::same_len;
use host::{ArgError, DeviceIn, DeviceOut, Error, Gpu, KernelCrate, LaunchConfig, Module};
use user_kernels_gpu::{self as k, BLOCK};

/// The PTX module holding the crate's kernels (built from `user-kernels-gpu`, or the blessed PTX
/// of `ptx/blessed/` without a PTX-capable toolchain).
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// The builder's manifest of [`PTX`] (JSON: arch, origin, toolchain, kernels, hashes).
pub const MANIFEST: &str = include_str!(concat!(env!("OUT_DIR"), "/manifest.json"));

/// The SM target the PTX was built for (`FERROCUDA_ARCH` at build time): the primary module's,
/// which the tests compare with the golden PTX.
pub const ARCH: &str = env!("FERROCUDA_BUILT_ARCH");

/// The crate's module for every SM target the builder built (the primary among them).
pub const MODULES: &[host::PtxModule] = include!(concat!(env!("OUT_DIR"), "/modules.rs"));

/// The reference CUDA C++ of the same kernels.
pub const REFERENCE: &[host::reference::Source] = &[host::reference::Source {
    name: "axpby.cu",
    text: include_str!("../reference/axpby.cu"),
}];

/// The crate as `host::Module` loads it: `Module::rust_of(gpu, &[KERNELS], arch)` for the Rust build,
/// `Module::cu_of` for the .cu twin.
pub const KERNELS: KernelCrate = KernelCrate {
    modules: MODULES,
    reference: REFERENCE,
};

/// `axpby`'s geometry and `n` for `x`, `y` and `z` of these lengths (equal, positive, within
/// `i32`).
pub fn config(x: usize, y: usize, z: usize) -> Result<(LaunchConfig, i32), ArgError> {
    let n = same_len(k::axpby::NAME, &[("x", x), ("y", y), ("z", z)])?;
    Ok((host::blocks(k::grid(n as u32), BLOCK), n))
}

/// `z = a x + b y`, elementwise, on `module` (either build of a module holding [`KERNELS`]).
pub fn axpby(
    module: &Module,
    gpu: &Gpu,
    x: DeviceIn<'_, f32>,
    y: DeviceIn<'_, f32>,
    z: DeviceOut<'_, f32>,
    a: f32,
    b: f32,
) -> Result<(), Error> {
    let (cfg, n) = config(x.len(), y.len(), z.len())?;
    // SAFETY: three buffers of `n` floats (checked above); the launch checks their alignment.
    unsafe { module.launch::<k::axpby>(gpu, cfg, (x, y, z, a, b, n)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer whose length differs from the others is named; a tail past the last whole
    /// `F32x4` group of a block takes one more block.
    #[test]
    fn lengths_are_checked_and_the_tail_gets_its_thread() {
        assert_eq!(config(12, 12, 11).unwrap_err().arg, "z");
        assert_eq!(config(12, 13, 12).unwrap_err().arg, "y");
        let grid = |n| config(n, n, n).unwrap().0.grid_dim.0;
        assert_eq!([grid(3), grid(4 * 256), grid(4 * 256 + 1)], [1, 1, 2]);
    }
}
