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

/// Threads per row for `rms_norm` and `rms_norm_zq8_f32`: enough whole warps for [`UNROLL`]
/// column groups per thread, at most 1024. The row reduction's order depends on it, so the chain
/// and the fused kernel must be launched with the same value; both launchers call this function.
pub const fn row_block_dim(ncols: u32) -> u32 {
    let per_thread = 4 * UNROLL;
    let warps = ncols.div_ceil(per_thread).div_ceil(32);
    let threads = warps * 32;
    if threads > 1024 {
        1024
    } else if threads == 0 {
        32
    } else {
        threads
    }
}

/// One loop trip of a thread: [`UNROLL`] column groups and which of them exist.
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
struct Trip {
    cols: [u32; UNROLL as usize],
    live: [bool; UNROLL as usize],
}

#[cfg(target_arch = "nvptx64")]
impl Trip {
    /// Groups `first + k * step`, live below `n4`. Liveness is uniform across each 8-lane
    /// q8_1 group (`n4` is a multiple of 8, `step` of 32), so a trip's code may shuffle within
    /// the group whatever its liveness.
    #[inline(always)]
    fn new(first: u32, step: u32, n4: i32) -> Self {
        let cols = core::array::from_fn(|k| first + k as u32 * step);
        Trip {
            cols,
            live: cols.map(|c| (c as i32) < n4),
        }
    }

    /// All of the trip's loads, issued before any use (zeros for missing groups): this is what
    /// keeps enough bytes in flight to saturate HBM.
    ///
    /// # Safety
    /// Every live group of `p` is readable and not written by the grid.
    #[inline(always)]
    unsafe fn load(&self, p: *const F32x4) -> [F32x4; UNROLL as usize] {
        core::array::from_fn(|k| {
            if self.live[k] {
                load_nc(p.add(self.cols[k] as usize))
            } else {
                F32x4::default()
            }
        })
    }
}

/// Runs `body` over this thread's trips of a row: groups `tid + k * B` in ascending order, as a
/// plain strided loop visits them, so sums built in `body` do not depend on the unrolling.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn for_each_trip(n4: i32, mut body: impl FnMut(&Trip)) {
    let b = block_dim_x();
    let mut first = thread_idx_x();
    while (first as i32) < n4 {
        body(&Trip::new(first, b, n4));
        first += UNROLL * b;
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
    for_each_trip(ncols / 4, |t| {
        let v = t.load(x);
        for k in 0..UNROLL as usize {
            if t.live[k] {
                sum = fma(v[k].x, v[k].x, sum);
                sum = fma(v[k].y, v[k].y, sum);
                sum = fma(v[k].z, v[k].z, sum);
                sum = fma(v[k].w, v[k].w, sum);
            }
        }
    });
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

/// Quantizes a trip's groups: each with the 7 other lanes of its q8_1 block, which call this
/// together. Every stage runs across all of the trip's groups before the next, so the shuffle
/// chains and divisions of different groups overlap instead of queueing. Only live groups
/// store; the first lane of each block writes its scale.
///
/// # Safety
/// All 8 lanes of each group call it; live `qs[i4]` and `d[i4 / 8]` are writable.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn quantize_trip(t: &Trip, v: [F32x4; UNROLL as usize], qs: *mut I8x4, d: *mut f32) {
    let mut amax = v.map(|v| max(max(abs(v.x), abs(v.y)), max(abs(v.z), abs(v.w))));
    let mask = group8_mask();
    let mut offset = 4;
    while offset > 0 {
        for a in amax.iter_mut() {
            *a = max(*a, shfl_xor(mask, *a, offset));
        }
        offset >>= 1;
    }
    let scale = amax.map(|a| a / 127.0);
    for k in 0..UNROLL as usize {
        let q = |x: f32| -> i8 {
            if amax[k] == 0.0 {
                0
            } else {
                // |x / scale| <= 127 by construction of `scale`.
                f32_to_i32_rz(round_half_away(x / scale[k])) as i8
            }
        };
        let q4 = I8x4 {
            x: q(v[k].x),
            y: q(v[k].y),
            z: q(v[k].z),
            w: q(v[k].w),
        };
        let i4 = t.cols[k];
        if t.live[k] {
            *qs.add(i4 as usize) = q4;
            if i4 % 8 == 0 {
                *d.add((i4 / 8) as usize) = scale[k];
            }
        }
    }
}

/// RMS norm of each row of `x` (one block per row), times the weight `w`.
///
/// # Launch
/// grid `nrows`, block [`row_block_dim`]`(ncols)`; `ncols` a multiple of 32.
///
/// # Safety
/// `x` and `z` hold `nrows * ncols` floats, `w` holds `ncols`.
#[kernel]
pub unsafe fn rms_norm(x: *const F32x4, w: *const F32x4, z: *mut F32x4, ncols: i32, eps: f32) {
    let row = block_idx_x() as usize * (ncols / 4) as usize;
    let x = x.add(row);
    let z = z.add(row);
    let scale = rms_scale(x, ncols, eps);
    for_each_trip(ncols / 4, |t| {
        let (v, g) = (t.load(x), t.load(w));
        for k in 0..UNROLL as usize {
            if t.live[k] {
                *z.add(t.cols[k] as usize) = scale_mul(scale, v[k], g[k]);
            }
        }
    });
}

/// q8_1 quantization of `n` contiguous floats into the `qs` / `d` planes. Thread `t` of the
/// grid handles column groups `t + k * span` (`span` = all threads of the grid, `k < UNROLL`);
/// the launcher picks a grid that gives each thread one live group when `n` is small (latency)
/// and [`UNROLL`] when it is large (bandwidth).
///
/// # Launch
/// block [`QUANTIZE_BLOCK`], grid from `host::norm_q8::quantize_config`; `n` a multiple of 32.
///
/// # Safety
/// `x` and `qs` hold `n` elements, `d` holds `n / 32`.
#[kernel]
pub unsafe fn quantize_q8_1(x: *const F32x4, qs: *mut I8x4, d: *mut f32, n: i32) {
    let span = grid_dim_x() * block_dim_x();
    let t = Trip::new(block_idx_x() * block_dim_x() + thread_idx_x(), span, n / 4);
    quantize_trip(&t, t.load(x), qs, d);
}

/// `rms_norm` and `quantize_q8_1` of its output in one launch: `z`, `qs` and `d` bit-identical
/// to the chain.
///
/// # Launch
/// As [`rms_norm`]: grid `nrows`, block [`row_block_dim`]`(ncols)`.
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
    let scale = rms_scale(x, ncols, eps);
    for_each_trip(ncols / 4, |t| {
        let (v, g) = (t.load(x), t.load(w));
        let zv: [F32x4; UNROLL as usize] = core::array::from_fn(|k| scale_mul(scale, v[k], g[k]));
        for k in 0..UNROLL as usize {
            if t.live[k] {
                *z.add(t.cols[k] as usize) = zv[k];
            }
        }
        quantize_trip(t, zv, qs, d);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_blocks_are_whole_warps_covering_the_row_in_one_trip_up_to_1024_threads() {
        for ncols in (32..=65536).step_by(32) {
            let b = row_block_dim(ncols);
            assert!(
                b.is_multiple_of(32) && (32..=1024).contains(&b),
                "ncols {ncols}: {b}"
            );
            if ncols <= 16384 {
                assert!(
                    b * 4 * UNROLL >= ncols,
                    "ncols {ncols}: {b} threads miss columns"
                );
                assert!(
                    (b - 32) * 4 * UNROLL < ncols,
                    "ncols {ncols}: a warp of {b} idles"
                );
            } else {
                assert_eq!(b, 1024);
            }
        }
    }
}
