//! ferrocuda's kernels, one module per kernel family.
//!
//! This crate builds twice. For `nvptx64-nvidia-cuda` (driven by the workspace's `build.rs`) every
//! `#[kernel]` fn becomes a PTX entry of the same name. For the host it exposes only what host and
//! device must agree on: the ABI types in [`abi`], the launch geometry of each family, and one
//! launch marker per kernel, so a launcher cannot drift from the kernel it launches.
//!
//! # Kernel ABI
//!
//! | kernel | arguments | grid | block | shared | computes |
//! |---|---|---|---|---|---|
//! | `rms_norm` | `x: *const F32x4, w: *const F32x4, z: *mut F32x4, ncols: i32, eps: f32` | `nrows` | [`norm_q8::row_block_dim`]`(nrows, ncols)` | 128 B | `z = x * rsqrt(mean(x^2) + eps) * w` per row |
//! | `quantize_q8_1` | `x: *const F32x4, qs: *mut I8x4, d: *mut f32, n: i32` | `ceil(n/4/256)`, or `/UNROLL` for large `n` | 256 | 0 | q8_1 planes of `x`: `d = amax/127`, `qs = round(x/d)` per 32 |
//! | `rms_norm_zq8_f32` | `x, w, z` as `rms_norm`, `qs: *mut I8x4, d: *mut f32, ncols: i32, eps: f32` | `nrows` | [`norm_q8::row_block_dim`]`(nrows, ncols)` | 128 B | `rms_norm` and `quantize_q8_1` of its `z`, one launch |
//! | `read_stream` | `x: *const F32x4, sink: *mut f32, n4: i64` | [`stream::READ_GRID_PER_SM`] x SMs | [`stream::READ_BLOCK`] | 0 | reads `x` once (the bandwidth ceiling) |
//!
//! Every length is in elements of the scalar type (`ncols`, `n` in f32). `ncols` and `n` are
//! multiples of 32 (the q8_1 block); the host launchers refuse anything else before launching.
//! The q8_1 activation is two planes: `qs[n]` (i8) and `d[n / 32]` (f32).
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
pub mod device;
pub mod norm_q8;
pub mod stream;

/// The largest block each kernel is launched with, by kernel name. A kernel's registers per
/// thread times this must fit the multiprocessor's register file, or the launch fails with "too
/// many resources requested"; the tests hold both builds to it with ptxas's register counts.
#[cfg(not(target_arch = "nvptx64"))]
pub fn max_block_threads(kernel: &str) -> Option<u32> {
    use abi::Kernel;
    [
        (norm_q8::rms_norm::NAME, norm_q8::MAX_ROW_BLOCK),
        (norm_q8::rms_norm_zq8_f32::NAME, norm_q8::MAX_ROW_BLOCK),
        (norm_q8::quantize_q8_1::NAME, norm_q8::QUANTIZE_BLOCK),
        (stream::read_stream::NAME, stream::READ_BLOCK),
    ]
    .into_iter()
    .find_map(|(name, threads)| (name == kernel).then_some(threads))
}

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // Kernels are written so that nothing can panic (raw pointers, no checked arithmetic); a
    // panic that slipped in still stops the grid rather than running on with garbage.
    device::trap()
}
