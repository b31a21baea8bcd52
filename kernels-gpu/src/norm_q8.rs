//! RMS norm, q8_1 quantization, and the two fused into one launch.
//!
//! The fused kernel must give the same bits as the chain `rms_norm` then `quantize_q8_1`: it
//! runs the same per-row reduction (same block size, same per-thread order, same tree) and
//! quantizes the `z` it has just written with the same per-block formula. The reference .cu
//! (`reference/norm_q8.cu`) must give the same bits as these kernels; every operation below is the
//! one NVCC emits for that file (see `device` for the instruction each wrapper stands for).
//!
//! # Thread mapping
//! Every thread owns whole `F32x4`s: column group `c` of a row is thread `c % blockDim.x`'s. A
//! q8_1 block (32 values) is 8 consecutive threads of one warp, which reduce its `amax` with an
//! 8-lane butterfly; a row's length is a multiple of 32, so those 8 lanes always run together.

use crate::abi::{F32x4, I8x4};
#[cfg(not(target_arch = "nvptx64"))]
use crate::abi::{Kernel, KernelSpec};
#[cfg(target_arch = "nvptx64")]
use crate::device::*;
use kernels_macros::kernel;

/// Values in one q8_1 block.
pub const QK8_1: u32 = 32;

/// Column groups (`F32x4`) each thread handles per loop trip: their loads are all issued before
/// the first is used, which is what keeps enough bytes in flight to saturate HBM.
pub const UNROLL: u32 = 4;

/// Threads per block of `quantize_q8_1`.
pub const QUANTIZE_BLOCK: u32 = 256;

/// Column groups from which `quantize_q8_1` gives each thread [`UNROLL`] of them rather than
/// one: below it a launch is latency-bound and wants every group on its own thread.
pub const QUANTIZE_UNROLL_FROM: u32 = 1 << 17;

/// Rows from which a row launch is sized for bandwidth rather than latency (see
/// [`row_block_dim`]).
pub const BANDWIDTH_ROWS: u32 = 256;

/// The most threads a row launch uses (one block per row).
pub const MAX_ROW_BLOCK: u32 = 1024;

/// Threads per row for `rms_norm` and `rms_norm_zq8_f32`, in whole warps, at most
/// [`MAX_ROW_BLOCK`].
///
/// Few rows leave most of the GPU idle, and the time is one block's latency: every column
/// group gets its own thread, so the reduction and the quantization run as wide as they can.
/// From [`BANDWIDTH_ROWS`] rows on, the GPU is full and the time is HBM's: each thread takes
/// [`UNROLL`] groups, whose loads it issues together.
///
/// The row reduction's order depends on the block size, so the chain and the fused kernel must
/// be launched with the same value (both launchers call this function), and a row's `z` can
/// differ in its last bits between a batch below and a batch above [`BANDWIDTH_ROWS`].
pub const fn row_block_dim(nrows: u32, ncols: u32) -> u32 {
    let groups_per_thread = if nrows >= BANDWIDTH_ROWS { UNROLL } else { 1 };
    let warps = (ncols / 4).div_ceil(groups_per_thread).div_ceil(32);
    let threads = warps * 32;
    if threads > MAX_ROW_BLOCK {
        MAX_ROW_BLOCK
    } else if threads == 0 {
        32
    } else {
        threads
    }
}

/// One loop trip of a thread over a row: the groups `first + k * B`, `k < UNROLL`.
///
/// A thread's groups are `tid + j * B`, visited [`UNROLL`] per trip in ascending order (as a
/// plain strided loop visits them, so sums do not depend on the unrolling). Whether a group
/// exists is uniform across each 8-lane q8_1 group (`n4` is a multiple of 8, `B` of 32), so code
/// that uses a trip may shuffle within its 8-lane group.
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
struct Trip {
    first: i32,
    n4: i32,
}

#[cfg(target_arch = "nvptx64")]
impl Trip {
    /// Column group `k` of the trip, or `None` past the row.
    #[inline(always)]
    fn col(self, k: usize) -> Option<usize> {
        let c = self.first + k as i32 * block_dim_x() as i32;
        (c < self.n4).then_some(c as usize)
    }

    /// Loads every group of the trip before any is used (zeros past the row), so that enough
    /// bytes are in flight to keep HBM busy.
    ///
    /// # Safety
    /// `p` points at `n4` readable groups that the grid does not write.
    #[inline(always)]
    unsafe fn load(self, p: *const F32x4) -> [F32x4; UNROLL as usize] {
        core::array::from_fn(|k| match self.col(k) {
            Some(c) => load_nc(p.add(c)),
            None => F32x4::default(),
        })
    }

    /// The trip after this one.
    #[inline(always)]
    fn next(self) -> Self {
        Trip {
            first: self.first + UNROLL as i32 * block_dim_x() as i32,
            ..self
        }
    }

    fn in_row(self) -> bool {
        self.first < self.n4
    }
}

/// This thread's first trip over a row of `ncols` floats.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn first_trip(ncols: i32) -> Trip {
    Trip {
        first: thread_idx_x() as i32,
        n4: ncols / 4,
    }
}

/// `rsqrt(mean(x^2) + eps)` over one row, the same bits in every thread of the block.
///
/// # Safety
/// All threads of the block call it; `x` points at `ncols` readable floats.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn rms_scale(x: *const F32x4, ncols: i32, eps: f32) -> f32 {
    let mut sum = 0.0f32;
    let mut t = first_trip(ncols);
    while t.in_row() {
        let v = t.load(x);
        for (k, v) in v.iter().enumerate() {
            if t.col(k).is_some() {
                sum = fma(v.x, v.x, sum);
                sum = fma(v.y, v.y, sum);
                sum = fma(v.z, v.z, sum);
                sum = fma(v.w, v.w, sum);
            }
        }
        t = t.next();
    }
    let sum = block_sum(sum);
    let mean = sum / i32_to_f32(ncols);
    rsqrt(mean + eps)
}

/// `scale * x * w` per lane, left to right as CUDA's `scale*v.x*g.x` evaluates.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn scale_mul(scale: f32, v: F32x4, g: F32x4) -> F32x4 {
    F32x4 {
        x: scale * v.x * g.x,
        y: scale * v.y * g.y,
        z: scale * v.z * g.z,
        w: scale * v.w * g.w,
    }
}

/// Calls `body(c, z)` for each of this thread's column groups `c` of the row, in ascending
/// order, with `z = scale * x * w`. `w0` is this thread's first trip of `w`, loaded before the
/// row reduction so that its latency overlaps the reduction: `w` comes cold from L2 or HBM,
/// while `x` was just read by this thread and comes from L1.
///
/// # Safety
/// `x` and `w` point at `ncols` readable floats that the grid does not write.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn for_each_z(
    x: *const F32x4,
    w: *const F32x4,
    w0: [F32x4; UNROLL as usize],
    ncols: i32,
    scale: f32,
    mut body: impl FnMut(usize, F32x4),
) {
    let mut emit = |t: Trip, v: [F32x4; UNROLL as usize], g: [F32x4; UNROLL as usize]| {
        for k in 0..UNROLL as usize {
            if let Some(c) = t.col(k) {
                body(c, scale_mul(scale, v[k], g[k]));
            }
        }
    };
    let t0 = first_trip(ncols);
    emit(t0, t0.load(x), w0);
    let mut t = t0.next();
    while t.in_row() {
        emit(t, t.load(x), t.load(w));
        t = t.next();
    }
}

/// Quantizes the four values of column group `i4`; the 8 threads of its q8_1 block call it
/// together, and the first of them writes the block's scale.
///
/// # Safety
/// All 8 threads of the group call it; `qs[i4]` and `d[i4 / 8]` are writable.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn quantize_group(v: F32x4, qs: *mut I8x4, d: *mut f32, i4: u32) {
    let amax = max(max(abs(v.x), abs(v.y)), max(abs(v.z), abs(v.w)));
    let amax = group8_max(amax);
    let scale = amax / 127.0;
    let q = |x: f32| -> i8 {
        if amax == 0.0 {
            0
        } else {
            // |x / scale| <= 127 by construction of `scale`.
            f32_to_i32_rz(round_half_away(x / scale)) as i8
        }
    };
    *qs.add(i4 as usize) = I8x4 {
        x: q(v.x),
        y: q(v.y),
        z: q(v.z),
        w: q(v.w),
    };
    if i4 % 8 == 0 {
        *d.add((i4 / 8) as usize) = scale;
    }
}

/// RMS norm of each row of `x` (one block per row), times the weight `w`.
///
/// # Launch
/// grid `nrows`, block [`row_block_dim`]`(nrows, ncols)`; `ncols` a multiple of 32.
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
    let groups: [u32; UNROLL as usize] = core::array::from_fn(|k| first + k as u32 * span);
    let live = |i4: u32| (i4 as i32) < n / 4;
    let vals = groups.map(|i4| {
        if live(i4) {
            load_nc(x.add(i4 as usize))
        } else {
            F32x4::default()
        }
    });
    for k in 0..UNROLL as usize {
        if live(groups[k]) {
            quantize_group(vals[k], qs, d, groups[k]);
        }
    }
}

/// `rms_norm` and `quantize_q8_1` of its output in one launch: `z`, `qs` and `d` bit-identical
/// to the chain.
///
/// # Launch
/// As [`rms_norm`]: grid `nrows`, block [`row_block_dim`]`(nrows, ncols)`.
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
    let w0 = first_trip(ncols).load(w);
    let scale = rms_scale(x, ncols, eps);
    for_each_z(x, w, w0, ncols, scale, |c, zc| {
        *z.add(c) = zc;
        quantize_group(zc, qs, d, c as u32);
    });
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
/// `roundf` as NVCC expands it, then the float-to-int conversion.
#[cfg(not(target_arch = "nvptx64"))]
const QUANTIZE_INSNS: &[&str] = &[
    "copysign.f32",
    "add.rz.f32",
    "cvt.rzi.f32.f32",
    "cvt.rzi.s32.f32",
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
mod tests {
    use super::*;

    #[test]
    fn row_blocks_are_whole_warps_covering_the_row_in_one_trip_up_to_1024_threads() {
        for (nrows, per_thread) in [
            (1, 4),
            (BANDWIDTH_ROWS - 1, 4),
            (BANDWIDTH_ROWS, 4 * UNROLL),
        ] {
            for ncols in (32..=65536).step_by(32) {
                let b = row_block_dim(nrows, ncols);
                assert!(
                    b.is_multiple_of(32) && (32..=1024).contains(&b),
                    "ncols {ncols}: {b}"
                );
                if ncols <= 1024 * per_thread {
                    assert!(
                        b * per_thread >= ncols,
                        "ncols {ncols}: {b} threads miss columns"
                    );
                    assert!(
                        (b - 32) * per_thread < ncols,
                        "ncols {ncols}: a warp of {b} idles"
                    );
                } else {
                    assert_eq!(b, 1024);
                }
            }
        }
    }
}
