//! A row's sum of squares, its scale `rsqrt(mean + eps)`, and `z = scale * x * w`.
//!
//! The sum is defined over `P = `[`row_threads`]`(ncols)` *virtual threads*, a function of
//! `ncols` alone, so that a row's bits do not depend on the batch:
//!
//! 1. virtual thread `j` sums the squares of groups `j, j + P, j + 2P, ...` in that order, each
//!    group's `x, y, z, w` in that order, one `fma(v, v, s)` each, from `s = 0`;
//! 2. each virtual warp (virtual threads `32u..32u+32`) reduces with the xor butterfly 16, 8, 4,
//!    2, 1;
//! 3. the `P / 32` virtual warp sums, in order of `u` and padded with zeros to 32, reduce with the
//!    same butterfly.
//!
//! A launch has `B = P / V` real threads a row, `V` virtual threads each ([`row_block_dim`]:
//! `V = 1` below [`BANDWIDTH_ROWS`] rows, [`UNROLL`] from there on); real thread `t` holds
//! virtual threads `t + kB`, `k < V`. As `V` divides [`UNROLL`] and
//! `t + mB = (t + (m mod V)·B) + (m div V)·P`, group `m` of thread `t` is the `(m div V)`-th
//! group of virtual thread `t + (m mod V)·B`, so visiting `m` in order keeps every virtual
//! thread's groups in order (step 1). `B` is a multiple of 32, so virtual warp `u = w + k·B/32`
//! is real warp `w`'s `k`-th partial sum, lane for lane (step 2), which `device::block_sum`
//! stores at index `u` (step 3). Both geometries so perform the same operations in the same
//! order (`tests::both_geometries_sum_in_the_same_order` runs this model on the CPU and compares
//! the sums bit for bit).

use super::*;

/// `rsqrt(mean(x^2) + eps)` over one row, the same bits in every thread of the block and in
/// either launch geometry.
///
/// # Safety
/// All threads of the block call it; `x` points at `ncols` readable floats; `blockDim.x` is
/// [`row_block_dim`]`(nrows, ncols)` for some `nrows`.
#[inline(always)]
pub(super) unsafe fn rms_scale(x: *const F32x4, ncols: i32, eps: f32) -> f32 {
    rms_scale_of(row_sum::<false>(x, ncols), ncols, eps)
}

/// The row's sum of squares (as [`rms_scale`] sums it); with `PREDICATED` each trip is loaded
/// by [`Trip::load_if`], as the fused kernel does, where `rms_norm` keeps [`Trip::load`].
///
/// # Safety
/// As [`rms_scale`].
#[inline(always)]
pub(super) unsafe fn row_sum<const PREDICATED: bool>(x: *const F32x4, ncols: i32) -> f32 {
    if block_dim_x() == row_threads(ncols as u32) {
        row_sum_sq::<1, PREDICATED>(x, ncols)
    } else {
        row_sum_sq::<{ UNROLL as usize }, PREDICATED>(x, ncols)
    }
}

/// `rsqrt(mean + eps)` of a row's sum of squares.
#[inline(always)]
pub(super) fn rms_scale_of(sum: f32, ncols: i32, eps: f32) -> f32 {
    let mean = sum / i32_to_f32(ncols);
    rsqrt(mean + eps)
}

/// The row's sum of squares over [`row_threads`]`(ncols)` virtual threads, `VIRTUAL_PER_THREAD`
/// (`V` in the module docs) on each real thread: the trip's group `k` goes to this thread's
/// virtual thread `k % VIRTUAL_PER_THREAD`, whose partial sum sees its groups in order.
///
/// # Safety
/// As [`rms_scale`], with `VIRTUAL_PER_THREAD * blockDim.x == row_threads(ncols)`;
/// `VIRTUAL_PER_THREAD` divides [`UNROLL`].
#[inline(always)]
unsafe fn row_sum_sq<const VIRTUAL_PER_THREAD: usize, const PREDICATED: bool>(
    x: *const F32x4,
    ncols: i32,
) -> f32 {
    let mut parts = [0.0f32; VIRTUAL_PER_THREAD];
    let mut t = first_trip(ncols);
    while t.in_row() {
        let v = if PREDICATED { t.load_if(x) } else { t.load(x) };
        unroll::<{ UNROLL as usize }>(|k| {
            if t.col(k).is_some() {
                parts[k % VIRTUAL_PER_THREAD] = v[k].dot_add(v[k], parts[k % VIRTUAL_PER_THREAD]);
            }
        });
        t = t.next();
    }
    block_sum(parts)
}

/// `scale * x * w` per lane, left to right as CUDA's `scale*v.x*g.x` evaluates, lane by lane:
/// written as `scale * v * g` on `F32x4`, the products of all four lanes by `scale` would come
/// first, which is the same bits in another PTX order.
#[inline(always)]
pub(super) fn scale_mul(scale: f32, v: F32x4, g: F32x4) -> F32x4 {
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
#[inline(always)]
pub(super) unsafe fn for_each_z(
    x: *const F32x4,
    w: *const F32x4,
    w0: [F32x4; UNROLL as usize],
    ncols: i32,
    scale: f32,
    mut body: impl FnMut(usize, F32x4),
) {
    let mut emit = |t: Trip, v: [F32x4; UNROLL as usize], g: [F32x4; UNROLL as usize]| {
        unroll::<{ UNROLL as usize }>(|k| {
            if let Some(c) = t.col(k) {
                body(c, scale_mul(scale, v[k], g[k]));
            }
        });
    };
    let t0 = first_trip(ncols);
    emit(t0, t0.load(x), w0);
    let mut t = t0.next();
    while t.in_row() {
        emit(t, t.load(x), t.load(w));
        t = t.next();
    }
}
