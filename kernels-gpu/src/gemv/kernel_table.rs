//! The family's kernel table: what each kernel's PTX must and must not contain.

use super::*;
use crate::abi::{concat, flatten, Group, KernelSpec};

/// What every CUDA-core kernel of the family is made of: 16-byte loads of the activation through
/// the coherent path (read after the wait for the kernel that wrote it, `chain_trigger`), `fma`
/// accumulation and the warp butterfly.
macro_rules! common_insns {
    ($($insn:literal),* $(,)?) => {
        &["ld.global.v4.u32", "fma.rn.f32", "shfl.sync.bfly.b32", $($insn),*]
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

/// Planar Q8_0: the same arithmetic on values loaded straight to registers, the weights by
/// read-only loads.
const Q8_0_PLANAR_INSNS: &[&str] = common_insns!(
    "ld.global.nc.v4.u32",
    "ld.global.nc.u16",
    "dp4a.s32.s32",
    "cvt.f32.f16",
    "cvt.rn.f32.s32",
    "mul.rn.f32",
);

/// e4m3 on the tensor cores, either scale: trips staged by `cp.async` behind the barrier of the
/// warps that share a tile (a warp's own up to `m = 2`, the block's from four) and read 8 bytes a
/// lane, the hardware decode to f16 and the activation's by `prmt` and an f16 subtraction, f16
/// `mma`, the factors or the tensor's scale, and the sums met in shared memory; and the activation
/// ([`e4m3_insns_at`]).
macro_rules! e4m3_insns {
    ($barrier:literal) => {
        &[
            "cp.async.cg.shared.global",
            "cp.async.wait_group",
            $barrier,
            "ld.shared.v2.u32",
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
const E4M3_X: usize = E4M3_BLOCK_INSNS.len() + STAGED_X.len();
const E4M3_WARP_LOADED: [&str; E4M3_X] = concat(E4M3_WARP_INSNS, LOADED_X);
const E4M3_BLOCK_LOADED: [&str; E4M3_X] = concat(E4M3_BLOCK_INSNS, LOADED_X);
const E4M3_BLOCK_STAGED: [&str; E4M3_X] = concat(E4M3_BLOCK_INSNS, STAGED_X);

/// Block-128's two-set tiles at one row ([`fp8_mma_sets`]) also load a trip's tile scales a
/// lane each and take each block's from the lane that holds it.
const TILES_AHEAD: &[&str] = &["ld.global.nc.f32", "shfl.sync.idx.b32"];
const E4M3_TILES_AHEAD: [&str; E4M3_X + TILES_AHEAD.len()] = concat(&E4M3_WARP_LOADED, TILES_AHEAD);

/// An e4m3 tensor-core kernel's instructions at `m`: its group's barrier ([`fp8_mma_warps`]), and
/// its activation loaded a trip ahead or staged ([`fp8_mma_x_staged`]).
const fn e4m3_insns_at(m: usize) -> &'static [&'static str] {
    if fp8_mma_warps(m) == 1 {
        &E4M3_WARP_LOADED
    } else if fp8_mma_x_staged(m) {
        &E4M3_BLOCK_STAGED
    } else {
        &E4M3_BLOCK_LOADED
    }
}

/// Q8_0 on the tensor cores, either layout: trips staged by `cp.async` (and the
/// 2-byte fallback) behind a block barrier, int8 `mma`, the f16 scales widened, the sums
/// converted, and the partial sums met in shared memory.
macro_rules! mma_insns {
    ($($insn:literal),* $(,)?) => {
        &[
            "cp.async.cg.shared.global",
            "cp.async.wait_group",
            "bar.sync",
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

/// Raw rows: the quants read 8 bytes at a time from an 8-byte boundary and funnel-shifted (the
/// sm_80 module reads them by words).
const Q8_0_MMA_INSNS: &[&str] = mma_insns!("ld.shared.v2.u32", "shf.r.clamp.b32");

/// Planar rows: the quants read 8 bytes at a time.
const Q8_0_PLANAR_MMA_INSNS: &[&str] = mma_insns!("ld.shared.v2.u32");

/// No division anywhere (a zero dividend takes IEEE division's slow path, and integer division
/// by a variable is a long sequence).
const NO_DIVISION: &str = "div.";

/// The planar kernels load straight to registers.
const PLANAR_FORBIDS: &[&str] = &[NO_DIVISION, "cp.async", ".shared"];
/// The e4m3 kernels convert nothing through the int-to-float unit or to f32 one by one.
const E4M3_CONVERTS: &[&str] = &[NO_DIVISION, "cvt.rn.f32.s32", "cvt.f32.f16", "dp4a"];
/// And they leave no lane sum to shuffles.
const E4M3_FORBIDS: [&str; E4M3_CONVERTS.len() + 1] = concat(E4M3_CONVERTS, &["shfl"]);
/// The e4m3 forbids, but a shuffle that is not a lane sum: block-128's two-set tiles at one row
/// share their tile scales by `shfl.sync.idx`.
const E4M3_TILES_AHEAD_FORBIDS: [&str; E4M3_CONVERTS.len() + 1] =
    concat(E4M3_CONVERTS, &["shfl.sync.bfly"]);
/// The tensor-core kernels leave no byte product to `dp4a` and no lane sum to shuffles.
const MMA_FORBIDS: &[&str] = &[NO_DIVISION, "dp4a", "shfl"];

/// How a Q8_0 tensor-core trip gets its activation ([`mma_x_staged`]): staged with the weights
/// (the block scales by 4-byte copies) and read 8 bytes a lane from shared memory, or loaded a
/// trip ahead, 8 bytes and a scale at a time, through the coherent path.
const STAGED_X: &[&str] = &["cp.async.ca.shared.global", "ld.shared.v2.u32"];
const LOADED_X: &[&str] = &["ld.global.v2.u32", "ld.global.f32"];
const _: () = assert!(STAGED_X.len() == LOADED_X.len());

/// Each layout's tensor-core instructions with each way to the activation.
const RAW_X: usize = Q8_0_MMA_INSNS.len() + STAGED_X.len();
const RAW_STAGED: [&str; RAW_X] = concat(Q8_0_MMA_INSNS, STAGED_X);
const RAW_LOADED: [&str; RAW_X] = concat(Q8_0_MMA_INSNS, LOADED_X);
const PLANAR_X: usize = Q8_0_PLANAR_MMA_INSNS.len() + STAGED_X.len();
const PLANAR_STAGED: [&str; PLANAR_X] = concat(Q8_0_PLANAR_MMA_INSNS, STAGED_X);
const PLANAR_LOADED: [&str; PLANAR_X] = concat(Q8_0_PLANAR_MMA_INSNS, LOADED_X);

/// The instructions of a Q8_0 tensor-core kernel at `m`: the layout's `staged` or `loaded` list.
const fn by_x(
    m: usize,
    staged: &'static [&'static str],
    loaded: &'static [&'static str],
) -> &'static [&'static str] {
    if mma_x_staged(m) {
        staged
    } else {
        loaded
    }
}

/// Only the division every kernel of the family forbids.
const Q8_0_FORBIDS: &[&str] = &[NO_DIVISION];

/// What the kernel of `format` at `batch` is made of, from the functions that choose its body:
/// [`tensor_cores`], and for e4m3 whether a warp or the block shares a tile ([`fp8_mma_warps`]).
const fn spec(format: Format, batch: Batch) -> KernelSpec {
    let m = batch.m();
    let (requires, forbids): (&[&str], &[&str]) = match format {
        Format::Q8_0 if tensor_cores(format, m) => (by_x(m, &RAW_STAGED, &RAW_LOADED), MMA_FORBIDS),
        Format::Q8_0 => (Q8_0_INSNS, Q8_0_FORBIDS),
        Format::Q8_0Planar if tensor_cores(format, m) => {
            (by_x(m, &PLANAR_STAGED, &PLANAR_LOADED), MMA_FORBIDS)
        }
        Format::Q8_0Planar => (Q8_0_PLANAR_INSNS, PLANAR_FORBIDS),
        Format::E4m3B128 if fp8_mma_sets(format, m) == 2 => {
            (&E4M3_TILES_AHEAD, &E4M3_TILES_AHEAD_FORBIDS)
        }
        Format::E4m3 | Format::E4m3B128 => (e4m3_insns_at(m), &E4M3_FORBIDS),
    };
    KernelSpec {
        name: "",
        max_block: BLOCK_THREADS,
        requires,
        forbids,
        only_on: None,
    }
}

/// Planar rows of a GLU: the planar tensor-core kernel's instructions but the 2-byte scale
/// copies, which it has none of (its scale rows are 16-byte aligned).
const Q8_0_PLANAR_GLU_MMA_INSNS: &[&str] = &[
    "cp.async.cg.shared.global",
    "cp.async.wait_group",
    "bar.sync",
    "ld.shared.u16",
    "ld.shared.v2.u32",
    "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
    "cvt.f32.f16",
    "cvt.rn.f32.s32",
    "mul.rn.f32",
    "fma.rn.f32",
    "st.shared.f32",
    "ld.shared.f32",
];

/// The planar GLU copies nothing 2 bytes at a time.
const PLANAR_GLU_FORBIDS: &[&str] = &[NO_DIVISION, "dp4a", "shfl", "ld.global.nc.u16"];

/// The GLU epilogue: the SwiGLU kernel's exponential and reciprocal.
const GLU_INSNS: &[&str] = &["ex2.approx.ftz.f32", "rcp.rn.f32"];

/// The e4m3 GLU epilogue: a gate row's lane takes its up row's sum by a shuffle.
const E4M3_GLU_INSNS: &[&str] = &["ex2.approx.ftz.f32", "rcp.rn.f32", "shfl.sync.bfly.b32"];

/// The e4m3 forbids but the shuffle.
const E4M3_GLU_FORBIDS: &[&str] = &[NO_DIVISION, "cvt.rn.f32.s32", "cvt.f32.f16", "dp4a"];

/// A GLU kernel: its format's tensor-core kernel at `batch` and the epilogue.
const fn glu_spec(format: Format, batch: Batch) -> KernelSpec {
    const Q8_0: usize = RAW_X + GLU_INSNS.len();
    const PLANAR_X: usize = Q8_0_PLANAR_GLU_MMA_INSNS.len() + STAGED_X.len();
    const PLANAR: usize = PLANAR_X + GLU_INSNS.len();
    const E4M3: usize = E4M3_X + E4M3_GLU_INSNS.len();
    const Q8_0_STAGED: [&str; Q8_0] = concat(&RAW_STAGED, GLU_INSNS);
    const Q8_0_LOADED: [&str; Q8_0] = concat(&RAW_LOADED, GLU_INSNS);
    const STAGED: [&str; PLANAR_X] = concat(Q8_0_PLANAR_GLU_MMA_INSNS, STAGED_X);
    const LOADED: [&str; PLANAR_X] = concat(Q8_0_PLANAR_GLU_MMA_INSNS, LOADED_X);
    const PLANAR_STAGED: [&str; PLANAR] = concat(&STAGED, GLU_INSNS);
    const PLANAR_LOADED: [&str; PLANAR] = concat(&LOADED, GLU_INSNS);
    let m = batch.m();
    const E4M3_WARP_GLU: [&str; E4M3] = concat(&E4M3_WARP_LOADED, E4M3_GLU_INSNS);
    const E4M3_BLOCK_GLU: [&str; E4M3] = concat(&E4M3_BLOCK_LOADED, E4M3_GLU_INSNS);
    const E4M3_STAGED_GLU: [&str; E4M3] = concat(&E4M3_BLOCK_STAGED, E4M3_GLU_INSNS);
    let (requires, forbids): (&[&str], &[&str]) = match format {
        Format::Q8_0 => (by_x(m, &Q8_0_STAGED, &Q8_0_LOADED), MMA_FORBIDS),
        Format::Q8_0Planar => (by_x(m, &PLANAR_STAGED, &PLANAR_LOADED), PLANAR_GLU_FORBIDS),
        _ if fp8_mma_warps(m) == 1 => (&E4M3_WARP_GLU, E4M3_GLU_FORBIDS),
        _ if fp8_mma_x_staged(m) => (&E4M3_STAGED_GLU, E4M3_GLU_FORBIDS),
        _ => (&E4M3_BLOCK_GLU, E4M3_GLU_FORBIDS),
    };
    KernelSpec {
        name: "",
        max_block: BLOCK_THREADS,
        requires,
        forbids,
        only_on: None,
    }
}

/// The specs of a format's entries (its GLU entries where `glu`), each from its own key.
const fn specs(format: Format, glu: bool, entries: &[(Batch, &'static str)]) -> [KernelSpec; 4] {
    let mut specs = [spec(format, Batch::M1); 4];
    let mut i = 0;
    while i < 4 {
        let (batch, name) = entries[i];
        let spec = if glu {
            glu_spec(format, batch)
        } else {
            spec(format, batch)
        };
        specs[i] = KernelSpec { name, ..spec };
        i += 1;
    }
    specs
}

/// The family's kernels, for the tests (see [`KernelSpec`]).
pub const KERNELS: &[KernelSpec] = &flatten::<32>(&[
    &specs(Format::Q8_0, false, GemvQ8_0::ENTRIES),
    &specs(Format::Q8_0Planar, false, GemvQ8_0Planar::ENTRIES),
    &specs(Format::E4m3, false, GemvE4m3::ENTRIES),
    &specs(Format::E4m3B128, false, GemvE4m3B128::ENTRIES),
    &specs(Format::Q8_0, true, GemvQ8_0Glu::ENTRIES),
    &specs(Format::Q8_0Planar, true, GemvQ8_0PlanarGlu::ENTRIES),
    &specs(Format::E4m3, true, GemvE4m3Glu::ENTRIES),
    &specs(Format::E4m3B128, true, GemvE4m3B128Glu::ENTRIES),
]);
