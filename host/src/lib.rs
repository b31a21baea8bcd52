//! ferrocuda's host side: a CUDA context and stream, PTX modules, and one typed launcher per
//! kernel.
//!
//! Two modules hold the same kernels: the Rust build (`ferrocuda::MODULES`, one PTX module per
//! SM target, of which the device runs the one [`module_arch`] picks) and the reference CUDA
//! C++ compiled by NVRTC for the same target ([`reference`](mod@reference)). Both are launched
//! through the same typed call, so the reference is held to the Rust kernel's exact signature.
//!
//! libcuda and libnvrtc are loaded at run time: everything here builds and unit-tests on a
//! machine with no GPU and no CUDA toolkit, and reports their absence as an [`Error`]. libnvrtc
//! is also found in the CUDA pip wheels without `LD_LIBRARY_PATH` (the `cuda-wheels` crate).
//!
//! # Calling the kernels from another crate
//! A launcher checks every extent and scalar against the kernel's limits before it launches, and
//! refuses what the kernel cannot take with an [`ArgError`] naming the argument; it queues the
//! launch on the [`Gpu`]'s stream. Here an activation row is quantized to q8_1 and multiplied by
//! e4m3 weights:
//!
//! ```no_run
//! use host::{gemv, norm_q8, Gpu, Module};
//!
//! fn main() -> Result<(), host::Error> {
//!     let (in_f, out_f) = (5120, 12288);
//!     let gpu = Gpu::new(0)?;
//!     let module = Module::rust(&gpu)?;
//!     let x = gpu.upload(&vec![0.5f32; in_f])?;
//!     let w = gpu.upload(&vec![0x38u8; in_f * out_f])?; // e4m3 0x38 is 1.0
//!     let (mut qs, mut d) = (gpu.alloc_poisoned(in_f, 0)?, gpu.alloc_poisoned(in_f / 32, 0)?);
//!     norm_q8::quantize_q8_1(&module, &gpu, &x, &mut qs, &mut d, in_f)?;
//!     let mut y = gpu.alloc_poisoned::<f32>(out_f, 0)?;
//!     let x = gemv::Activation { qs: &qs, d: &d };
//!     let shape = gemv::Shape { m: 1, in_f, out_f };
//!     gemv::gemv_e4m3(&module, &gpu, &w, 1.0, x, &mut y, shape)?;
//!     let y = gpu.download(&y)?; // waits for the stream
//!     assert!((y[0] - 0.5 * in_f as f32).abs() < 1.0);
//!     Ok(())
//! }
//! ```
//!
//! [`mla`]'s module docs chain absorb_q, attn_flash and decompress_v the same way, for one decode
//! step's attention.

pub mod arch;
mod balance;
pub mod check;
mod error;
pub mod gemv;
mod gpu;
pub mod mla;
mod module;
pub mod norm_q8;
mod params;
pub mod reference;
pub mod stream;
pub mod swiglu;

pub use arch::module_arch;
pub use cudarc::driver::{
    CudaGraph, CudaSlice, CudaStream, CudaView, CudaViewMut, DeviceRepr, LaunchConfig,
};
pub use error::{ArgError, Context, Error};
pub use ferrocuda::PtxModule;
pub use gpu::{DeviceInfo, Gpu};
pub use module::{Build, KernelCrate, Module, FERROCUDA};
pub use params::{DeviceIn, DeviceOut, Element, Param, Params, Writable};

/// A one-dimensional launch of `grid` blocks of `block` threads, with no dynamic shared memory.
pub fn blocks(grid: u32, block: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}
