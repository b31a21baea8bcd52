//! The family's kernel table: what each kernel's PTX must and must not contain.

use super::*;
use crate::abi::{Kernel, KernelSpec};

/// What every kernel of the family is made of: 16-byte read-only loads of the activation (and
/// of the weights, except the raw Q8_0 kernels' `cp.async`), `fma` accumulation and the warp
/// butterfly.
macro_rules! common_insns {
    ($($insn:literal),* $(,)?) => {
        &["ld.global.nc.v4.u32", "fma.rn.f32", "shfl.sync.bfly.b32", $($insn),*]
    };
}

/// Raw Q8_0: staging by `cp.async` (and its 2-byte fallback), unaligned quants by funnel shifts,
/// `dp4a`, the f16 scale widened, the integer sum converted.
const Q8_0_INSNS: &[&str] = common_insns!(
    "cp.async.cg.shared.global",
    "cp.async.wait_group",
    "bar.warp.sync",
    "ld.shared.u32",
    "ld.shared.u16",
    "shf.r.clamp.b32",
    "ld.global.nc.u16",
    "st.shared.u16",
    "dp4a.s32.s32",
    "cvt.f32.f16",
    "cvt.rn.f32.s32",
    "mul.rn.f32",
);

/// Planar Q8_0: the same arithmetic on values loaded straight to registers.
const Q8_0_PLANAR_INSNS: &[&str] = common_insns!(
    "ld.global.nc.u16",
    "dp4a.s32.s32",
    "cvt.f32.f16",
    "cvt.rn.f32.s32",
    "mul.rn.f32",
);

/// e4m3 on the tensor cores, either scale: trips staged by `cp.async` behind the barrier of the
/// warps that share a tile (a warp's own up to `m = 2`, the block's from four) and read 8 bytes a
/// lane, the activation read 8 bytes a lane, the hardware decode to f16 and the activation's by
/// `prmt` and an f16 subtraction, f16 `mma`, the factors or the tensor's scale, and the sums met
/// in shared memory.
macro_rules! e4m3_insns {
    ($barrier:literal) => {
        &[
            "cp.async.cg.shared.global",
            "cp.async.wait_group",
            $barrier,
            "ld.shared.v2.u32",
            "ld.global.nc.v2.u32",
            "ld.global.nc.f32",
            "cvt.rn.f16x2.e4m3x2",
            "prmt.b32",
            "sub.rn.f16x2",
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
            "fma.rn.f32",
            "mul.rn.f32",
            "st.shared.f32",
            "ld.shared.f32",
        ]
    };
}

const E4M3_WARP_INSNS: &[&str] = e4m3_insns!("bar.warp.sync");
const E4M3_BLOCK_INSNS: &[&str] = e4m3_insns!("bar.sync");

/// Q8_0 on the tensor cores, either layout: trips staged by `cp.async` (and the
/// 2-byte fallback) behind a block barrier, the activation read 8 bytes a lane, int8 `mma`, the
/// f16 scales widened, the sums converted, and the partial sums met in shared memory.
macro_rules! mma_insns {
    ($($insn:literal),* $(,)?) => {
        &[
            "cp.async.cg.shared.global",
            "cp.async.wait_group",
            "bar.sync",
            "ld.global.nc.v2.u32",
            "ld.global.nc.u16",
            "st.shared.u16",
            "ld.shared.u16",
            "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
            "cvt.f32.f16",
            "cvt.rn.f32.s32",
            "mul.rn.f32",
            "fma.rn.f32",
            "st.shared.f32",
            "ld.shared.f32",
            $($insn),*
        ]
    };
}

/// Raw rows: the quants read by aligned words and funnel shifts.
const Q8_0_MMA_INSNS: &[&str] = mma_insns!("ld.shared.u32", "shf.r.clamp.b32");

/// Planar rows: the quants read 8 bytes at a time.
const Q8_0_PLANAR_MMA_INSNS: &[&str] = mma_insns!("ld.shared.v2.u32");

/// No division anywhere (a zero dividend takes IEEE division's slow path, and integer division
/// by a variable is a long sequence).
const NO_DIVISION: &str = "div.";

/// The planar kernels load straight to registers.
const PLANAR_FORBIDS: &[&str] = &[NO_DIVISION, "cp.async", ".shared"];
/// The e4m3 kernels convert nothing through the int-to-float unit or to f32 one by one.
const E4M3_FORBIDS: &[&str] = &[NO_DIVISION, "cvt.rn.f32.s32", "cvt.f32.f16", "dp4a", "shfl"];
/// The tensor-core kernels leave no byte product to `dp4a` and no lane sum to shuffles.
const MMA_FORBIDS: &[&str] = &[NO_DIVISION, "dp4a", "shfl"];

const fn spec(
    name: &'static str,
    requires: &'static [&'static str],
    forbids: &'static [&'static str],
) -> KernelSpec {
    KernelSpec {
        name,
        max_block: BLOCK_THREADS,
        requires,
        forbids,
    }
}

/// The family's kernels, for the tests (see [`KernelSpec`]).
pub const KERNELS: &[KernelSpec] = &[
    spec(gemv_q8_0_m1::NAME, Q8_0_INSNS, &[NO_DIVISION]),
    spec(gemv_q8_0_m2::NAME, Q8_0_INSNS, &[NO_DIVISION]),
    spec(gemv_q8_0_m4::NAME, Q8_0_MMA_INSNS, MMA_FORBIDS),
    spec(gemv_q8_0_m8::NAME, Q8_0_MMA_INSNS, MMA_FORBIDS),
    spec(gemv_q8_0_planar_m1::NAME, Q8_0_PLANAR_INSNS, PLANAR_FORBIDS),
    spec(gemv_q8_0_planar_m2::NAME, Q8_0_PLANAR_INSNS, PLANAR_FORBIDS),
    spec(
        gemv_q8_0_planar_m4::NAME,
        Q8_0_PLANAR_MMA_INSNS,
        MMA_FORBIDS,
    ),
    spec(
        gemv_q8_0_planar_m8::NAME,
        Q8_0_PLANAR_MMA_INSNS,
        MMA_FORBIDS,
    ),
    spec(gemv_e4m3_m1::NAME, E4M3_WARP_INSNS, E4M3_FORBIDS),
    spec(gemv_e4m3_m2::NAME, E4M3_WARP_INSNS, E4M3_FORBIDS),
    spec(gemv_e4m3_m4::NAME, E4M3_BLOCK_INSNS, E4M3_FORBIDS),
    spec(gemv_e4m3_m8::NAME, E4M3_BLOCK_INSNS, E4M3_FORBIDS),
    spec(gemv_e4m3_b128_m1::NAME, E4M3_WARP_INSNS, E4M3_FORBIDS),
    spec(gemv_e4m3_b128_m2::NAME, E4M3_WARP_INSNS, E4M3_FORBIDS),
    spec(gemv_e4m3_b128_m4::NAME, E4M3_BLOCK_INSNS, E4M3_FORBIDS),
    spec(gemv_e4m3_b128_m8::NAME, E4M3_BLOCK_INSNS, E4M3_FORBIDS),
];
