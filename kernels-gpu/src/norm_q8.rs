//! RMS norm, q8_1 quantization, and the quantization fused into one launch after the norm
//! (`rms_norm_zq8_f32`) or after SwiGLU (`swiglu_q8_1`): the activations of a decode step's GEMVs.
//!
//! A fused kernel gives the bits of its chain (`rms_norm` or `swiglu`, then `quantize_q8_1`): the
//! same values, then the same per-block formula on the ones it has just written. The reference .cu
//! (`reference/norm_q8.cu`) gives the same bits; every operation is the one NVCC emits for that
//! file (`device` names the instruction each wrapper stands for).
//!
//! # Thread mapping
//! A row is `n4 = ncols / 4` column groups (`F32x4`). Group `c` is thread `c % blockDim.x`'s,
//! which visits its groups `tid + m * blockDim.x` in ascending `m`, [`UNROLL`] a trip (`trip`).
//! A q8_1 block (32 values) is 8 consecutive groups: since `blockDim.x` and `n4` are multiples of
//! 32 and 8, it is 8 consecutive lanes `8i..8i+8` of one warp in one trip, in or past the row
//! together, which reduce its `amax` with an 8-lane butterfly.
//!
//! # Per-output operations
//! - `rms_norm`: the row's sum of squares, one `fma(v, v, s)` a value over [`row_threads`]`(ncols)`
//!   virtual threads and then butterflies in the order `rms` gives, a function of `ncols` alone,
//!   so that a row's outputs do not depend on the batch; `mean = sum / ncols` (IEEE division),
//!   `scale = rsqrt.approx(mean + eps)`, `z = scale * x * w` left to right.
//! - q8_1, per block of 32 values: `amax = max |x|` (`fmaxf`), `d = amax / 127` (IEEE), and per
//!   value `q = 0` where `x` is ±0, else `round_half_away(x / d)` (IEEE division) converted by
//!   `cvt.rzi.s32.f32` and saturated to `[-127, 127]`. The Rust build reaches the same `q` with
//!   few divisions, and keeps zeros off the division's slow path (`quantize`).
//!
//! IEEE rules decide the corners, alike in both builds: a row whose sum of squares overflows f32
//! (values around 2^64 and up) gets `scale = 0` and `z = ±0` (NaN where `x` is infinite); a NaN
//! in `x` makes the row's `z` NaN; an all-zero row with `eps = 0` gives NaN (`0 * rsqrt(0)`). A
//! NaN counts in `amax` only when the whole block is NaN, and quantizes to 0; an infinity makes
//! its block's `d` infinite and every `q` of it 0; a subnormal `d` can carry `|x / d|` past
//! 127.5, which the saturation keeps from wrapping to the opposite sign.

#[cfg(any(test, target_arch = "nvptx64"))]
mod quantize;
#[cfg(target_arch = "nvptx64")]
mod rms;
#[cfg(target_arch = "nvptx64")]
mod trip;

use crate::abi::{F32x4, I8x4};
#[cfg(not(target_arch = "nvptx64"))]
use crate::abi::{Kernel, KernelSpec};
#[cfg(target_arch = "nvptx64")]
use crate::device::*;
use crate::kernel;
#[cfg(target_arch = "nvptx64")]
use quantize::*;
#[cfg(target_arch = "nvptx64")]
use rms::*;
#[cfg(target_arch = "nvptx64")]
use trip::*;

/// Values in one q8_1 block.
pub const QK8_1: u32 = 32;

/// How far from a rounding tie (`k + 0.5`) the product `x * (1 / d)` must be for its rounding to
/// be the quotient's: `2^-14`, above the `2^-15` the two may differ by (`quantize`'s docs).
pub const TIE_MARGIN: f32 = 1.0 / 16384.0;

/// Column groups (`F32x4`) each thread handles per loop trip: their loads are all issued before
/// the first is used, which is what keeps enough bytes in flight to saturate HBM. It is also the
/// number of virtual threads a real thread holds in the bandwidth geometry.
pub const UNROLL: u32 = 4;

/// Threads per block of `quantize_q8_1`.
pub const QUANTIZE_BLOCK: u32 = 256;

/// Column groups from which `quantize_q8_1` gives each thread [`UNROLL`] of them rather than
/// one: below it a launch is latency-bound and wants every group on its own thread.
pub const QUANTIZE_UNROLL_FROM: u32 = 1 << 17;

/// Rows from which a row launch is sized for bandwidth rather than latency (see
/// [`row_block_dim`]).
pub const BANDWIDTH_ROWS: u32 = 256;

/// The most threads a row launch uses (one block per row), and the most virtual threads a row's
/// reduction has: one shared-memory slot per virtual warp, 32 of them.
pub const MAX_ROW_BLOCK: u32 = 1024;

/// The virtual threads of a row's reduction (`P` in `rms`'s docs): one per column group,
/// rounded up to a multiple of 128 so that both launch geometries are whole warps, at most
/// [`MAX_ROW_BLOCK`]. A function of `ncols` alone, which is what makes the reduction the same in
/// every launch. Rows whose `ncols` is not a multiple of 512 leave up to three warps idle in the
/// latency geometry.
pub const fn row_threads(ncols: u32) -> u32 {
    let n4 = ncols / 4;
    let threads = n4.div_ceil(4 * 32) * (4 * 32);
    if threads > MAX_ROW_BLOCK {
        MAX_ROW_BLOCK
    } else if threads == 0 {
        4 * 32
    } else {
        threads
    }
}

/// Threads per row for `rms_norm` and `rms_norm_zq8_f32`: [`row_threads`]`(ncols)` below
/// [`BANDWIDTH_ROWS`] rows, a quarter of it from there on.
///
/// Few rows leave most of the GPU idle, and the time is one block's latency: every column
/// group (up to 4096 columns) gets its own thread, so the reduction and the quantization run as
/// wide as they can. From [`BANDWIDTH_ROWS`] rows on, the GPU is full and the time is HBM's:
/// each thread takes [`UNROLL`] groups per trip, whose loads it issues together, and holds
/// [`UNROLL`] virtual threads of the reduction.
///
/// Both geometries run the same reduction (`rms`'s docs), so a row's outputs do not depend on
/// how many rows share the launch. The kernels take only these two block sizes.
pub const fn row_block_dim(nrows: u32, ncols: u32) -> u32 {
    let threads = row_threads(ncols);
    if nrows >= BANDWIDTH_ROWS {
        threads / UNROLL
    } else {
        threads
    }
}

/// RMS norm of each row of `x` (one block per row), times the weight `w`.
///
/// # Launch
/// grid `nrows`, block [`row_block_dim`]`(nrows, ncols)` (no other block size); `ncols` a
/// multiple of 32; 128 bytes of static shared memory, no dynamic shared memory.
///
/// # Safety
/// `x` and `z` hold `nrows * ncols` floats, `w` holds `ncols`.
#[kernel]
pub unsafe fn rms_norm(x: *const F32x4, w: *const F32x4, z: *mut F32x4, ncols: i32, eps: f32) {
    crate::chain_entry();
    let row = block_idx_x() as usize * (ncols / 4) as usize;
    let x = x.add(row);
    let z = z.add(row);
    let w0 = first_trip(ncols).load(w);
    let scale = rms_scale(x, ncols, eps);
    for_each_z(x, w, w0, ncols, scale, |c, zc| *z.add(c) = zc);
}

/// q8_1 quantization of `n` contiguous floats into the `qs` / `d` planes. Thread `t` of the
/// grid handles column groups `t + k * span` (`span` = all threads of the grid, `k < UNROLL`),
/// loading all of them before quantizing any; the launcher picks a grid that gives each thread
/// one group when `n` is small (latency) and [`UNROLL`] when it is large (bandwidth).
///
/// # Launch
/// block [`QUANTIZE_BLOCK`], grid from `host::norm_q8::quantize_config`; `n` a multiple of 32.
///
/// # Safety
/// `x` and `qs` hold `n` elements, `d` holds `n / 32`.
#[kernel]
pub unsafe fn quantize_q8_1(x: *const F32x4, qs: *mut I8x4, d: *mut f32, n: i32) {
    crate::chain_entry();
    let span = grid_dim_x() * block_dim_x();
    let first = block_idx_x() * block_dim_x() + thread_idx_x();
    let group = |k: usize| first + k as u32 * span;
    let live = |i4: u32| (i4 as i32) < n / 4;
    // A group past `n` is not loaded (its registers are left unset, not zeroed) and not read.
    let mut vals = [F32x4::default(); UNROLL as usize];
    unroll::<{ UNROLL as usize }>(|k| {
        vals[k] = load_nc_if(live(group(k)), x.wrapping_add(group(k) as usize));
    });
    unroll::<{ UNROLL as usize }>(|k| {
        if live(group(k)) {
            quantize_group(vals[k], qs, d, group(k));
        }
    });
}

/// `rms_norm` and `quantize_q8_1` of its output in one launch: `z`, `qs` and `d` bit-identical
/// to the chain.
///
/// # Launch
/// As [`rms_norm`]: grid `nrows`, block [`row_block_dim`]`(nrows, ncols)`, 128 bytes of static
/// shared memory.
///
/// # Safety
/// `x`, `z` and `qs` hold `nrows * ncols` elements, `w` holds `ncols`, `d` holds
/// `nrows * ncols / 32`.
#[kernel]
pub unsafe fn rms_norm_zq8_f32(
    x: *const F32x4,
    w: *const F32x4,
    z: *mut F32x4,
    qs: *mut I8x4,
    d: *mut f32,
    ncols: i32,
    eps: f32,
) {
    crate::chain_entry();
    let row = block_idx_x() as usize * (ncols / 4) as usize;
    let x = x.add(row);
    let z = z.add(row);
    let qs = qs.add(row);
    let d = d.add(row / 8);
    // As in `rms_norm`, the first trip of `w` is loaded before the reduction and `x` again
    // after it (from L1). The reload comes before the mean's division: placed after it (LLVM
    // puts the division among the loads otherwise), the division's slow-path branch splits the
    // four loads in SASS, where NVCC issues them back to back.
    let t0 = first_trip(ncols);
    let w0 = t0.load_if(w);
    let sum = row_sum::<true>(x, ncols);
    let x0 = t0.load_if(x);
    let scale = rms_scale_of(sum, ncols, eps);
    // Every lane of the block runs the first trip, so the warp is whole there.
    norm_quantize_trip::<true>(t0, x0, w0, scale, z, qs, d);
    // A warp's lanes may leave this loop at different trips, so later trips (rows wider than
    // one trip: 4096 columns in the bandwidth geometry) quantize group by group; the whole-warp
    // path here as well would not fit NVRTC's build in the registers of a 1024-thread block
    // (perf-notes, norm_q8: the fused kernel's first trip).
    let mut t = t0.next();
    while t.in_row() {
        norm_quantize_trip::<false>(t, t.load(x), t.load(w), scale, z, qs, d);
        t = t.next();
    }
}

/// Threads per block of `swiglu_q8_1`.
pub const SWIGLU_Q8_BLOCK: u32 = 256;

/// `swiglu` of each row of `g` and `u` and `quantize_q8_1` of its output, in one launch: `y`,
/// `qs` and `d` bit-identical to the chain. Rows of `g` and `u` are `ld` floats apart, so that
/// the two halves of one GEMV over the gate and up rows (`[rows][2 ffn]`) are read in place;
/// `y`, `qs` and `d` are dense. Row `blockIdx.y`'s column group `c` is thread `c % blockDim.x`
/// of block `c / blockDim.x`, so a q8_1 block's 8 groups are 8 consecutive lanes, in or past
/// the row together.
///
/// # Launch
/// grid `(ceil(ncols/4 / SWIGLU_Q8_BLOCK), nrows)`, block [`SWIGLU_Q8_BLOCK`]; `ncols` a
/// multiple of 32, `ld` a multiple of 4 and at least `ncols`.
///
/// # Safety
/// `g` and `u` hold `(nrows - 1) * ld + ncols` floats, `y` and `qs` `nrows * ncols` elements,
/// `d` `nrows * ncols / 32`.
#[kernel]
pub unsafe fn swiglu_q8_1(
    g: *const F32x4,
    u: *const F32x4,
    y: *mut F32x4,
    qs: *mut I8x4,
    d: *mut f32,
    ncols: i32,
    ld: i32,
) {
    crate::chain_entry();
    let n4 = ncols as u32 / 4;
    let c = block_idx_x() * block_dim_x() + thread_idx_x();
    if c >= n4 {
        return;
    }
    let row = block_idx_y() as usize;
    let at = row * (ld as u32 / 4) as usize + c as usize;
    let v = crate::swiglu::swiglu4(load_nc(g.add(at)), load_nc(u.add(at)));
    let out = row * n4 as usize;
    *y.add(out + c as usize) = v;
    quantize_group(v, qs.add(out), d.add(out / 8), c);
}

/// `z = scale * x * w` and its q8_1 planes for one trip of the fused kernel.
///
/// With `WHOLE_WARP` (every lane of the warp calls it) and every group of the trip in the row in
/// every lane (always so at 4096 columns from [`BANDWIDTH_ROWS`] rows on), the warp stores the
/// trip's four `z`, reduces their four blocks' `amax` at once with whole-warp shuffles
/// (`device::group8_max_warp`: the same butterfly, so the same bits), then quantizes each group
/// without a guard: no per-group branch, no member-mask check before each butterfly, and the
/// four butterflies overlap. Otherwise each group in the row is normalised and quantized on its
/// own, as in `rms_norm` and `quantize_q8_1`, so that a launch whose lanes hold one live group
/// (the latency geometry up to 4096 columns) computes nothing for the groups past the row.
///
/// # Safety
/// As [`rms_norm_zq8_f32`], for this thread's row pointers; every lane of the warp that holds
/// a group of the trip calls it, and with `WHOLE_WARP` every lane of the warp.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn norm_quantize_trip<const WHOLE_WARP: bool>(
    t: Trip,
    v: [F32x4; UNROLL as usize],
    g: [F32x4; UNROLL as usize],
    scale: f32,
    z: *mut F32x4,
    qs: *mut I8x4,
    d: *mut f32,
) {
    if WHOLE_WARP && t.warp_live() {
        let mut zt = [F32x4::default(); UNROLL as usize];
        unroll::<{ UNROLL as usize }>(|k| {
            zt[k] = scale_mul(scale, v[k], g[k]);
            *z.add(t.col_unchecked(k)) = zt[k];
        });
        let mut amax = [0.0f32; UNROLL as usize];
        unroll::<{ UNROLL as usize }>(|k| {
            amax[k] = group8_max_warp(lane_abs_max(zt[k]));
        });
        unroll::<{ UNROLL as usize }>(|k| {
            quantize_group_amax(zt[k], amax[k], qs, d, t.col_unchecked(k) as u32);
        });
    } else {
        unroll::<{ UNROLL as usize }>(|k| {
            if let Some(c) = t.col(k) {
                let zc = scale_mul(scale, v[k], g[k]);
                *z.add(c) = zc;
                quantize_group(zc, qs, d, c as u32);
            }
        });
    }
}

/// What `rms_norm` is made of (see `device`): the fused sum of squares, the warp butterfly, the
/// block reduction through shared memory, IEEE division of the mean, `rsqrtf`, and the
/// read-only vector loads.
#[cfg(not(target_arch = "nvptx64"))]
const RMS_NORM_INSNS: &[&str] = &[
    "fma.rn.f32",
    "shfl.sync.bfly.b32",
    "rsqrt.approx.f32",
    "div.rn.f32",
    "bar.sync",
    "st.shared.f32",
    "ld.shared.f32",
    "ld.global.nc.v4.f32",
];

/// What `quantize_q8_1` is made of: `fabsf`/`fmaxf` for the block's amax, IEEE division, and
/// `roundf` as NVCC expands it, then the float-to-int conversion and the saturation to
/// `[-127, 127]`.
#[cfg(not(target_arch = "nvptx64"))]
const QUANTIZE_INSNS: &[&str] = &[
    "copysign.f32",
    "add.rz.f32",
    "cvt.rzi.f32.f32",
    "cvt.rzi.s32.f32",
    "min.s32",
    "max.s32",
    "max.f32",
    "abs.f32",
    "div.rn.f32",
];

/// The fused kernel is both.
#[cfg(not(target_arch = "nvptx64"))]
const FUSED_INSNS: &[&str] = &crate::abi::concat::<17>(RMS_NORM_INSNS, QUANTIZE_INSNS);

/// `swiglu_q8_1` is swiglu's operations, then the quantization's.
#[cfg(not(target_arch = "nvptx64"))]
const SWIGLU_Q8_INSNS: &[&str] =
    &crate::abi::concat::<11>(&["fma.rn.f32", "ex2.approx.ftz.f32"], QUANTIZE_INSNS);

/// The family's kernels, for the tests (see [`KernelSpec`]).
#[cfg(not(target_arch = "nvptx64"))]
pub const KERNELS: &[KernelSpec] = &[
    KernelSpec {
        name: rms_norm::NAME,
        max_block: MAX_ROW_BLOCK,
        requires: RMS_NORM_INSNS,
        forbids: &[],
        only_on: None,
    },
    KernelSpec {
        name: quantize_q8_1::NAME,
        max_block: QUANTIZE_BLOCK,
        requires: QUANTIZE_INSNS,
        forbids: &[],
        only_on: None,
    },
    KernelSpec {
        name: rms_norm_zq8_f32::NAME,
        max_block: MAX_ROW_BLOCK,
        requires: FUSED_INSNS,
        forbids: &[],
        only_on: None,
    },
    KernelSpec {
        name: swiglu_q8_1::NAME,
        max_block: SWIGLU_Q8_BLOCK,
        requires: SWIGLU_Q8_INSNS,
        forbids: &[],
        only_on: None,
    },
];

#[cfg(test)]
mod tests;
