//! ferrocuda's host side: a CUDA context and stream, PTX modules, and one typed launcher per
//! kernel.
//!
//! Two modules hold the same kernels: the Rust build (`ferrocuda::PTX`) and the reference CUDA
//! C++ compiled by NVRTC ([`reference`](mod@reference)). Both are launched through the same
//! typed call, so the reference is held to the Rust kernel's exact signature.
//!
//! libcuda and libnvrtc are loaded at run time: everything here builds and unit-tests on a
//! machine with no GPU and no CUDA toolkit, and reports their absence as an [`Error`]. libnvrtc
//! is also found in the CUDA pip wheels without `LD_LIBRARY_PATH` (the `cuda-wheels` crate).

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

pub use cudarc::driver::{CudaGraph, CudaSlice, CudaStream, LaunchConfig};
pub use error::{ArgError, Error};
pub use gpu::{DeviceInfo, Gpu};
pub use module::{Build, Module};
pub use params::{Element, Param, Params};

/// A one-dimensional launch of `grid` blocks of `block` threads, with no dynamic shared memory.
pub fn blocks(grid: u32, block: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}
