//! Named wrappers for every PTX instruction ferrocuda's kernels rely on, and the vector types they
//! read and write: a `#![no_std]` crate any Rust kernel crate can use.
//!
//! Bit identity with the reference .cu is decided here: each wrapper names the instruction NVCC
//! emits for the CUDA construct it stands for, so a kernel written with these wrappers performs
//! the same operations as the CUDA C++ written the idiomatic way. Plain `+`, `*` and `/` on f32
//! already lower to `add.rn.f32`, `mul.rn.f32` and `div.rn.f32` (LLVM never contracts them), which
//! is what NVCC's `a + b`, `a * b` and IEEE `a / b` give; the wrappers cover the rest.
//! `docs/device.md` tabulates the CUDA C++ each wrapper matches.

//!
//! On the host the crate is the vector types and the e4m3 decode's bit arithmetic ([`e4m3`]); the
//! wrappers exist on `nvptx64` only.
//!
//! A kernel crate is built once per SM target (`-C target-cpu=sm_80`, ...); a wrapper whose
//! instruction a target lacks reads rustc's `target_feature` cfg (`sm_89`, `sm_90`, each set on
//! its own target and every newer one) and emits what that target has instead. Hopper's
//! warpgroup instructions exist on `sm_90a` alone (`target_feature = "sm_90a"`, which no other
//! target sets), and so do the kernels that use them.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        asm_experimental_arch,
        link_llvm_intrinsics,
        core_intrinsics,
        stdarch_nvptx
    )
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

pub mod e4m3;
pub mod vector;
pub use vector::{F32x4, I8x4, F16};

#[cfg(target_arch = "nvptx64")]
mod exp;
#[cfg(target_arch = "nvptx64")]
mod fp8;
#[cfg(target_arch = "nvptx64")]
mod gather;
#[cfg(target_arch = "nvptx64")]
mod int8;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
mod mbarrier;
#[cfg(target_arch = "nvptx64")]
mod memory;
#[cfg(target_arch = "nvptx64")]
mod mma;
#[cfg(target_arch = "nvptx64")]
mod shared;
#[cfg(target_arch = "nvptx64")]
mod unroll;
#[cfg(target_arch = "nvptx64")]
mod warp;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
mod warpgroup;
#[cfg(target_arch = "nvptx64")]
mod wrappers;

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
pub use mbarrier::*;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
pub use warpgroup::*;
#[cfg(target_arch = "nvptx64")]
pub use {
    exp::{expf, expf_add, rcp},
    fp8::*,
    gather::load_nc_i32,
    int8::*,
    memory::*,
    mma::*,
    shared::*,
    unroll::unroll,
    warp::{
        group16_max_warp, group16_sum, group8_reduce_scatter, group8_sum, warp_max,
        warp_reduce_scatter,
    },
    wrappers::*,
};
