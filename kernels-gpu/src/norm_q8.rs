//! RMS norm, q8_1 quantization, and the two fused into one launch.
//!
//! The fused kernel must give the same bits as the chain `rms_norm` then `quantize_q8_1`: it
//! runs the same per-row reduction and quantizes the `z` it has just written with the same
//! per-block formula. The reference .cu (`reference/norm_q8.cu`) must give the same bits as these
//! kernels; every operation below is the one NVCC emits for that file (see `device` for the
//! instruction each wrapper stands for).
//!
//! # Thread mapping
//! A row is `n4 = ncols / 4` column groups (`F32x4`). Every thread owns whole groups: group `c`
//! of a row is thread `c % blockDim.x`'s, and a thread visits its groups `tid + m * blockDim.x`
//! in ascending `m`, [`UNROLL`] per loop trip. A q8_1 block (32 values) is 8 consecutive groups;
//! since `blockDim.x` is a multiple of 32, `c` and `tid` agree modulo 32, so a block is always 8
//! consecutive lanes `8i..8i+8` of one warp in the same trip, which reduce its `amax` with an
//! 8-lane butterfly. `n4` is a multiple of 8, so those 8 lanes are in or past the row together.
//!
//! # The row reduction does not depend on the batch
//! The sum of squares of a row is defined over `P = `[`row_threads`]`(ncols)` *virtual threads*,
//! a function of `ncols` alone (a multiple of 128, at most [`MAX_ROW_BLOCK`]):
//!
//! 1. virtual thread `j` sums the squares of groups `j, j + P, j + 2P, ...` in that order, each
//!    group's `x, y, z, w` in that order, one `fma(v, v, s)` each, from `s = 0`;
//! 2. each virtual warp (virtual threads `32u..32u+32`) reduces with the xor butterfly 16, 8, 4,
//!    2, 1;
//! 3. the `P / 32` virtual warp sums, in order of `u` and padded with zeros to 32, reduce with the
//!    same butterfly.
//!
//! A launch runs it with `B = P / V` real threads per row, `V` virtual threads per real thread:
//! `V = 1` below [`BANDWIDTH_ROWS`] rows, `V = `[`UNROLL`] from there on (see
//! [`row_block_dim`]). Real thread `t` holds virtual threads `t + kB`, `k < V`. Its groups
//! `t + mB` are the same strided set for any block size, and since `V` divides [`UNROLL`] and
//! `t + mB = (t + (m mod V)·B) + (m div V)·P`, group `m` of thread `t` is the `(m div V)`-th group
//! of virtual thread `t + (m mod V)·B`; the thread visits `m` in ascending order, so every virtual
//! thread's sum sees its groups in order (step 1). `B` is a multiple of 32, so virtual warp
//! `u = w + k·B/32` is real warp `w`'s `k`-th partial sum lane for lane (step 2), and
//! `device::block_sum` stores it at index `u` (step 3). Every float operation, its operands and
//! their order are therefore the same for both geometries: a row's `z`, `qs` and `d` are the same
//! bits whatever the number of rows in the launch. `tests::both_geometries_sum_in_the_same_order`
//! runs this model on the CPU for both geometries and compares the sums bit for bit.
//!
//! With `V = 1` the tree is the plain block reduction of one partial sum per thread; with `V = 4`
//! a warp reduces its four virtual warps at once (`device::warp_reduce_scatter`: halving exchanges
//! at offsets 16 and 8, then a butterfly over 4, 2, 1, six shuffles in all), adding the same
//! pairs as four butterflies would.
//!
//! # Numerics
//! `rms_norm`: the sum of squares in f32 as above, `mean = sum / ncols` (IEEE division),
//! `scale = rsqrt.approx(mean + eps)`, `z = scale * x * w` left to right. IEEE rules decide the
//! rest: a row whose sum of squares overflows f32 (values around 2^64 and up) gets
//! `scale = rsqrt(inf) = 0` and `z = ±0` (NaN where `x` is infinite); a NaN in `x` makes the row's
//! `z` NaN; an all-zero row with `eps = 0` gives NaN (`0 * rsqrt(0)`).
//!
//! q8_1, per block of 32 values `x`: `amax = max |x|` (`fmaxf`, so a NaN counts only when the
//! whole block is NaN), `d = amax / 127` (IEEE), and per value
//!
//! - `q = 0` where `x` is ±0 (an all-zero block is all zeros with `d = 0`);
//! - else `q = round_half_away(x / d)` (IEEE division), converted to an integer by
//!   `cvt.rzi.s32.f32` (NaN gives 0) and saturated to `[-127, 127]`.
//!
//! For a normal `d` (`amax >= 127 * 2^-126`), `|x / d| <= 127 * (1 + 2^-23)` rounds to at most
//! 127, so saturation changes nothing and `q` is llama.cpp's. Below that `d` is subnormal with
//! fewer significant bits, and from about `amax < 2^-135` its rounding error can carry
//! `|x / d|` past 127.5 (`amax = 2^-140`: `d = 2^-147`, `amax / d = 128`), which an i8 would wrap
//! to the opposite sign; at `amax <= 127 * 2^-150`, `d` is 0 and every nonzero `x` saturates to
//! ±127. Non-finite values follow from the same operations: a NaN quantizes to 0; an infinity
//! makes `d = inf` and its whole block 0 (`finite / inf = 0`, `inf / inf = NaN`).
//!
//! The Rust build computes these bits with few divisions. Where `d` is normal (every block
//! with `amax >= 127 * 2^-126`), a value's product with the correctly rounded reciprocal, `y =
//! x * rcp(d)`, is within `2^-15` of the IEEE quotient `x / d` (two roundings of relative error
//! `2^-24` each, at `|x / d| <= 127 * (1 + 2^-23)`, plus `2^-150` should `y` underflow). So where
//! `y` is farther than [`TIE_MARGIN`] (`2^-14`) from every tie `k + 0.5`, the quotient is on the
//! same side of every tie and both round to `y`'s nearest integer, which the kernel takes
//! without dividing (`nearest_clear`, checked on the CPU by
//! `tests::products_clear_of_ties_round_as_the_quotients`). A value within the margin is divided
//! on its own (about one group in 2000 of ordinary data holds one), and every value of a block
//! whose `d` is not normal (subnormal, zero, infinite or NaN) is divided. A subnormal `d` would take the division's slow path for
//! every value; it and the dividends are divided scaled by `2^64` instead, which is exact and
//! leaves every quotient as it was (`tests::scaled_subnormal_divisions_give_the_same_quotients`).
//! The reference .cu divides every value as it is, as llama.cpp does.
//!
//! IEEE `div.rn.f32` takes its slow path when the dividend or the divisor is zero, and zeros are
//! common in real activations. So no zero is divided, and no select or branch follows a
//! division (either would keep the compilers from running the four divisions of a group
//! straight through):
//!
//! - the block's divisor is `div = a / 127` with `a = amax`, or `a = 127` for an all-zero block,
//!   whose values are then divided by 1 and whose stored `d` is selected as 0;
//! - a zero `x` is divided as `div / 4` (`zero_num`), whose quotient rounds to `q = 0` for every
//!   divisor: 0.25 for a normal one, below 0.5 where `div / 4` rounds (subnormal `div`), and NaN
//!   (so `q = 0`) where `div` is 0, infinite or NaN (checked by
//!   `tests::a_zero_divided_as_a_quarter_of_the_divisor_quantizes_to_zero`).
//!
//! The bits are those of the rule above. In the reference .cu, subnormal operands still take the
//! slow path, and so do the zeros of blocks with `amax` below about `2^-117`, whose `div / 4` is
//! subnormal; in the Rust build, which divides rarely, only a divided zero whose `zero_num` is 0,
//! or subnormal in a block with a normal `d`, does.

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
use kernels_macros::kernel;
#[cfg(target_arch = "nvptx64")]
use quantize::*;
#[cfg(target_arch = "nvptx64")]
use rms::*;
#[cfg(target_arch = "nvptx64")]
use trip::*;

/// Values in one q8_1 block.
pub const QK8_1: u32 = 32;

/// How far from a rounding tie (`k + 0.5`) the product `x * (1 / d)` must be for its rounding to
/// be the quotient's: `2^-14`, above the `2^-15` the two may differ by (module docs).
pub const TIE_MARGIN: f32 = 1.0 / 16384.0;

/// Column groups (`F32x4`) each thread handles per loop trip: their loads are all issued before
/// the first is used, which is what keeps enough bytes in flight to saturate HBM. It is also the
/// number of virtual threads a real thread holds in the bandwidth geometry.
pub const UNROLL: u32 = 4;
// The trip loops are written out with `unroll_in_place!(k < 4; 4 => ...)`.
const _: () = assert!(UNROLL == 4);

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

/// The virtual threads of a row's reduction (`P` in the module docs): one per column group,
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
/// Both geometries run the same reduction (module docs), so a row's outputs do not depend on
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
    let span = grid_dim_x() * block_dim_x();
    let first = block_idx_x() * block_dim_x() + thread_idx_x();
    let group = |k: usize| first + k as u32 * span;
    let live = |i4: u32| (i4 as i32) < n / 4;
    // A group past `n` is not loaded (its registers are left unset, not zeroed) and not read.
    let mut vals = [F32x4::default(); UNROLL as usize];
    unroll_in_place!(k < 4; 4 => {
        vals[k] = load_nc_if(live(group(k)), x.wrapping_add(group(k) as usize));
    });
    unroll_in_place!(k < 4; 4 => {
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
    // path here as well took NVRTC's build of the kernel past 64 registers.
    let mut t = t0.next();
    while t.in_row() {
        norm_quantize_trip::<false>(t, t.load(x), t.load(w), scale, z, qs, d);
        t = t.next();
    }
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
        unroll_in_place!(k < 4; 4 => {
            zt[k] = scale_mul(scale, v[k], g[k]);
            *z.add(t.col_unchecked(k)) = zt[k];
        });
        let mut amax = [0.0f32; UNROLL as usize];
        unroll_in_place!(k < 4; 4 => { amax[k] = group8_max_warp(lane_abs_max(zt[k])); });
        unroll_in_place!(k < 4; 4 => {
            quantize_group_amax(zt[k], amax[k], qs, d, t.col_unchecked(k) as u32);
        });
    } else {
        unroll_in_place!(k < 4; 4 => {
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
const FUSED_INSNS: &[&str] = &[
    "fma.rn.f32",
    "shfl.sync.bfly.b32",
    "rsqrt.approx.f32",
    "bar.sync",
    "st.shared.f32",
    "ld.shared.f32",
    "ld.global.nc.v4.f32",
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

/// The family's kernels, for the tests (see [`KernelSpec`]).
#[cfg(not(target_arch = "nvptx64"))]
pub const KERNELS: &[KernelSpec] = &[
    KernelSpec {
        name: rms_norm::NAME,
        max_block: MAX_ROW_BLOCK,
        requires: RMS_NORM_INSNS,
        forbids: &[],
    },
    KernelSpec {
        name: quantize_q8_1::NAME,
        max_block: QUANTIZE_BLOCK,
        requires: QUANTIZE_INSNS,
        forbids: &[],
    },
    KernelSpec {
        name: rms_norm_zq8_f32::NAME,
        max_block: MAX_ROW_BLOCK,
        requires: FUSED_INSNS,
        forbids: &[],
    },
];

#[cfg(test)]
mod tests;
