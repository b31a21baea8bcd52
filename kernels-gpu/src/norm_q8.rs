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

use crate::abi::{F32x4, I8x4};
#[cfg(not(target_arch = "nvptx64"))]
use crate::abi::{Kernel, KernelSpec};
#[cfg(target_arch = "nvptx64")]
use crate::device::*;
use kernels_macros::kernel;

/// Values in one q8_1 block.
pub const QK8_1: u32 = 32;

/// How far from a rounding tie (`k + 0.5`) the product `x * (1 / d)` must be for its rounding to
/// be the quotient's: `2^-14`, above the `2^-15` the two may differ by (module docs).
pub const TIE_MARGIN: f32 = 1.0 / 16384.0;

/// Column groups (`F32x4`) each thread handles per loop trip: their loads are all issued before
/// the first is used, which is what keeps enough bytes in flight to saturate HBM. It is also the
/// number of virtual threads a real thread holds in the bandwidth geometry.
pub const UNROLL: u32 = 4;
// The trip loops are written out with `unroll4!`.
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
        let mut v = [F32x4::default(); UNROLL as usize];
        unroll4!(k => {
            if let Some(c) = self.col(k) {
                v[k] = load_nc(p.add(c));
            }
        });
        v
    }

    /// Whether column group `k` of the trip is in the row.
    #[inline(always)]
    fn live(self, k: usize) -> bool {
        self.col(k).is_some()
    }

    /// Column group `k` of the trip, in the row or not (an address formed from it past the row
    /// must not be read).
    #[inline(always)]
    fn col_unchecked(self, k: usize) -> usize {
        (self.first + k as i32 * block_dim_x() as i32) as usize
    }

    /// [`Trip::load`] as straight-line code: each group's load predicated inside its
    /// instruction (`device::load_nc_if`), a group past the row left unset rather than zeroed,
    /// so that no zeroing moves and no branch come between the loads.
    ///
    /// # Safety
    /// As [`Trip::load`].
    #[inline(always)]
    unsafe fn load_if(self, p: *const F32x4) -> [F32x4; UNROLL as usize] {
        let mut v = [F32x4::default(); UNROLL as usize];
        unroll4!(k => {
            v[k] = load_nc_if(self.live(k), p.wrapping_add(self.col_unchecked(k)));
        });
        v
    }

    /// Whether every group of the trip is in the row in every lane of the warp: the last
    /// group of the warp's last lane (`first | 31` is that lane's `first`, `blockDim.x` being a
    /// multiple of 32) is. The same in every lane of the warp.
    #[inline(always)]
    fn warp_live(self) -> bool {
        (self.first | 31) + (UNROLL as i32 - 1) * (block_dim_x() as i32) < self.n4
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

/// `rsqrt(mean(x^2) + eps)` over one row, the same bits in every thread of the block and in
/// either launch geometry.
///
/// # Safety
/// All threads of the block call it; `x` points at `ncols` readable floats; `blockDim.x` is
/// [`row_block_dim`]`(nrows, ncols)` for some `nrows`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn rms_scale(x: *const F32x4, ncols: i32, eps: f32) -> f32 {
    rms_scale_of(row_sum::<false>(x, ncols), ncols, eps)
}

/// The row's sum of squares (as [`rms_scale`] sums it); with `PREDICATED` each trip is loaded
/// by [`Trip::load_if`], as the fused kernel does, where `rms_norm` keeps [`Trip::load`].
///
/// # Safety
/// As [`rms_scale`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn row_sum<const PREDICATED: bool>(x: *const F32x4, ncols: i32) -> f32 {
    if block_dim_x() == row_threads(ncols as u32) {
        row_sum_sq::<1, PREDICATED>(x, ncols)
    } else {
        row_sum_sq::<{ UNROLL as usize }, PREDICATED>(x, ncols)
    }
}

/// `rsqrt(mean + eps)` of a row's sum of squares.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn rms_scale_of(sum: f32, ncols: i32, eps: f32) -> f32 {
    let mean = sum / i32_to_f32(ncols);
    rsqrt(mean + eps)
}

/// The row's sum of squares over [`row_threads`]`(ncols)` virtual threads, `V` of them on each
/// real thread (module docs): the trip's group `k` goes to this thread's virtual thread
/// `k % V`, whose partial sum `parts[k % V]` sees its groups in order.
///
/// # Safety
/// As [`rms_scale`], with `V * blockDim.x == row_threads(ncols)`; `V` divides [`UNROLL`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn row_sum_sq<const V: usize, const PREDICATED: bool>(x: *const F32x4, ncols: i32) -> f32 {
    let mut parts = [0.0f32; V];
    let mut t = first_trip(ncols);
    while t.in_row() {
        let v = if PREDICATED { t.load_if(x) } else { t.load(x) };
        unroll4!(k => {
            if t.col(k).is_some() {
                let sum = &mut parts[k % V];
                *sum = fma(v[k].x, v[k].x, *sum);
                *sum = fma(v[k].y, v[k].y, *sum);
                *sum = fma(v[k].z, v[k].z, *sum);
                *sum = fma(v[k].w, v[k].w, *sum);
            }
        });
        t = t.next();
    }
    block_sum(parts)
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
        unroll4!(k => {
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

/// `1.5 * 2^23`: a float in `[-2^22, 2^22]` added to it rounds to an integer (ties to even),
/// which the sum's low mantissa bits then hold.
#[cfg(any(test, target_arch = "nvptx64"))]
const ROUNDER: f32 = 12_582_912.0;

/// The integer nearest to `y = x * rcp`, and whether `y` is clear of rounding ties: farther than
/// [`TIE_MARGIN`] from every `k + 0.5`. For `|y| < 2^22` every step is exact but the product: `t
/// = y + ROUNDER` is `ROUNDER + k` for the nearest `k`, `t - ROUNDER` is `k`, `y - k` is the
/// distance to it; a NaN `y` is not clear.
#[cfg(any(test, target_arch = "nvptx64"))]
#[inline(always)]
fn nearest_clear(x: f32, rcp: f32) -> (i32, bool) {
    let y = x * rcp;
    let t = y + ROUNDER;
    let k = (t.to_bits() as i32).wrapping_sub(ROUNDER.to_bits() as i32);
    (k, (y - (t - ROUNDER)).abs() < 0.5 - TIE_MARGIN)
}

/// `q` of one value `x` of a block divided by `div`, by the division itself. A zero `x` is
/// divided as `zero_num`, a quarter of `div`, whose quotient rounds to `q = 0`; so the quotient
/// is used whatever `x` is and no zero reaches the division's slow path. `q` saturates because a
/// subnormal `d` can put `|x / d|` past 127.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn divide_value(x: f32, div: f32, zero_num: f32) -> i8 {
    let num = if x != 0.0 { x } else { zero_num };
    f32_to_i32_rz(round_half_away(num / div)).clamp(-127, 127) as i8
}

/// `2^64`: a subnormal divisor times it is normal, and so are its block's nonzero values (the
/// products are exact, so the quotients do not change).
#[cfg(any(test, target_arch = "nvptx64"))]
const SUBNORMAL_SCALE: f32 = 18_446_744_073_709_551_616.0;

/// The `q` of a column group's four values of a block divided by `div`. Where `div` is normal
/// and a product `x * (1 / div)` is clear of rounding ties, its nearest integer is the
/// quotient's `round_half_away` (module docs), with no division; the other values are divided.
/// When all four are clear (every group but about one in 2000 of ordinary data) no division is
/// reached at all; one that is not costs one division, not four, which is what a one-row launch
/// waits for. A subnormal `div` and its dividends are scaled by [`SUBNORMAL_SCALE`] first, which
/// keeps the division off its slow path without changing its quotient.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn quantize_values(v: F32x4, div: f32) -> I8x4 {
    let normal = (f32::MIN_POSITIVE..=f32::MAX).contains(&div);
    let r = rcp(if normal { div } else { 1.0 });
    let n = [v.x, v.y, v.z, v.w].map(|x| {
        let (k, clear) = nearest_clear(x, r);
        (k, clear & normal)
    });
    if n[0].1 & n[1].1 & n[2].1 & n[3].1 {
        return I8x4 {
            x: n[0].0 as i8,
            y: n[1].0 as i8,
            z: n[2].0 as i8,
            w: n[3].0 as i8,
        };
    }
    let s = if div > 0.0 && div < f32::MIN_POSITIVE {
        SUBNORMAL_SCALE
    } else {
        1.0
    };
    let (div_s, zero_num) = (div * s, div * 0.25 * s);
    let q = |(k, clear): (i32, bool), x: f32| {
        if clear {
            k as i8
        } else {
            divide_value(x * s, div_s, zero_num)
        }
    };
    I8x4 {
        x: q(n[0], v.x),
        y: q(n[1], v.y),
        z: q(n[2], v.z),
        w: q(n[3], v.w),
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
    quantize_group_amax(v, group8_max(lane_abs_max(v)), qs, d, i4);
}

/// The largest magnitude of one lane's four values (`fmaxf` of `fabsf`).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn lane_abs_max(v: F32x4) -> f32 {
    max(max(abs(v.x), abs(v.y)), max(abs(v.z), abs(v.w)))
}

/// [`quantize_group`] given its block's `amax`.
///
/// # Safety
/// As [`quantize_group`], but only this thread need call it.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn quantize_group_amax(v: F32x4, amax: f32, qs: *mut I8x4, d: *mut f32, i4: u32) {
    // An all-zero block divides 127 by 127 for its values' divisor 1, and stores `d = 0`:
    // `0 / 127` would take the division's slow path. `opaque` keeps the compiler from turning
    // `(c ? amax : 127) / 127` into `c ? amax / 127 : 1`, which divides zero again.
    let nonzero = amax != 0.0;
    let div = opaque(if nonzero { amax } else { 127.0 }) / 127.0;
    let scale = if nonzero { div } else { 0.0 };
    *qs.add(i4 as usize) = quantize_values(v, div);
    if i4 % 8 == 0 {
        *d.add((i4 / 8) as usize) = scale;
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
    unroll4!(k => {
        vals[k] = load_nc_if(live(group(k)), x.wrapping_add(group(k) as usize));
    });
    unroll4!(k => {
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
        unroll4!(k => {
            zt[k] = scale_mul(scale, v[k], g[k]);
            *z.add(t.col_unchecked(k)) = zt[k];
        });
        let mut amax = [0.0f32; UNROLL as usize];
        unroll4!(k => { amax[k] = group8_max_warp(lane_abs_max(zt[k])); });
        unroll4!(k => {
            quantize_group_amax(zt[k], amax[k], qs, d, t.col_unchecked(k) as u32);
        });
    } else {
        unroll4!(k => {
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
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    const COLS: core::ops::RangeInclusive<u32> = 32..=65536;

    #[test]
    fn row_threads_are_the_fewest_whole_warp_quads_covering_the_row_up_to_1024() {
        for ncols in COLS.step_by(32) {
            let p = row_threads(ncols);
            let n4 = ncols / 4;
            assert!(
                p.is_multiple_of(128) && (128..=1024).contains(&p),
                "{ncols}: {p}"
            );
            if n4 <= 1024 {
                assert!(
                    p >= n4 && p - 128 < n4,
                    "ncols {ncols}: {p} virtual threads"
                );
            } else {
                assert_eq!(p, 1024, "ncols {ncols}");
            }
        }
    }

    #[test]
    fn row_blocks_are_the_virtual_threads_or_a_quarter_of_them_in_whole_warps() {
        for ncols in COLS.step_by(32) {
            let p = row_threads(ncols);
            for nrows in [1, BANDWIDTH_ROWS - 1] {
                assert_eq!(row_block_dim(nrows, ncols), p);
            }
            for nrows in [BANDWIDTH_ROWS, 1 << 20] {
                let b = row_block_dim(nrows, ncols);
                assert!(
                    b * UNROLL == p && b.is_multiple_of(32),
                    "ncols {ncols}: {b}"
                );
            }
        }
    }

    /// `v + shfl_xor(v, offset)` in every lane for offsets 16, 8, 4, 2, 1 (`device::warp_sum`).
    fn butterfly(mut lanes: [f32; 32]) -> [f32; 32] {
        for offset in [16, 8, 4, 2, 1] {
            let before = lanes;
            for (lane, v) in lanes.iter_mut().enumerate() {
                *v = before[lane] + before[lane ^ offset];
            }
        }
        lanes
    }

    /// The row reduction of `row_sum_sq` and `device::block_sum` on the CPU, operation for
    /// operation, for a block of `block` threads over `virtual_threads` virtual threads.
    fn row_sum_model(row: &[f32], block: usize, virtual_threads: usize) -> f32 {
        let n4 = row.len() / 4;
        let v = virtual_threads / block;
        assert!(v * block == virtual_threads && (UNROLL as usize).is_multiple_of(v));
        // Each real thread's `parts`, filled by the trip loop.
        let parts: Vec<Vec<f32>> = (0..block)
            .map(|t| {
                let mut parts = std::vec![0.0f32; v];
                let mut first = t;
                while first < n4 {
                    for k in 0..UNROLL as usize {
                        let c = first + k * block;
                        if c < n4 {
                            let sum = &mut parts[k % v];
                            for &x in &row[4 * c..4 * c + 4] {
                                *sum = x.mul_add(x, *sum);
                            }
                        }
                    }
                    first += UNROLL as usize * block;
                }
                parts
            })
            .collect();
        // `block_sum`: warp `w`'s `k`-th parts form virtual warp `w + k * nwarps`, whose lane 0
        // stores its butterfly sum there; then one butterfly over the stored sums.
        let nwarps = block / 32;
        let mut scratch = [f32::NAN; 32];
        for w in 0..nwarps {
            for k in 0..v {
                let warp = butterfly(core::array::from_fn(|lane| parts[32 * w + lane][k]));
                scratch[w + k * nwarps] = warp[0];
            }
        }
        let sums = butterfly(core::array::from_fn(|lane| match lane < v * nwarps {
            true => scratch[lane],
            false => 0.0,
        }));
        assert!(sums.iter().all(|s| s.to_bits() == sums[0].to_bits()));
        sums[0]
    }

    /// A row of values over a few binades, whose sums of squares round differently in most
    /// summation orders.
    fn row(ncols: usize, seed: u64) -> Vec<f32> {
        let mut state = seed;
        (0..ncols)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let mantissa = 1.0 + (state >> 41) as f32 / (1u64 << 23) as f32;
                let exponent = ((state >> 33) % 8) as i32 - 4;
                let sign = if state >> 63 == 0 { 1.0 } else { -1.0 };
                sign * mantissa * 2f32.powi(exponent)
            })
            .collect()
    }

    /// The module docs' claim, checked: both launch geometries perform the same operations in
    /// the same order, so every row sums to the same bits in either; and the model is fine
    /// enough to tell orders apart: the v7 geometry (one partial sum per real thread, so `P` was
    /// the block size) sums a good share of rows (about a third) to other bits in its two
    /// geometries where their block sizes differ.
    #[test]
    fn both_geometries_sum_in_the_same_order() {
        let (mut v7_cases, mut v7_differs) = (0, 0);
        for ncols in (32..=2048)
            .step_by(32)
            .chain([4096, 4128, 6144, 8192, 16384, 20000])
        {
            let p = row_threads(ncols) as usize;
            let latency = row_block_dim(1, ncols) as usize;
            let bandwidth = row_block_dim(BANDWIDTH_ROWS, ncols) as usize;
            for seed in 0..4 {
                let row = row(ncols as usize, seed * 7919 + ncols as u64);
                let a = row_sum_model(&row, latency, p);
                let b = row_sum_model(&row, bandwidth, p);
                assert_eq!(
                    a.to_bits(),
                    b.to_bits(),
                    "ncols {ncols}, seed {seed}: {a} vs {b}"
                );

                let v7_threads = |groups_per_thread: usize| {
                    ((ncols as usize / 4)
                        .div_ceil(groups_per_thread)
                        .div_ceil(32)
                        * 32)
                        .min(1024)
                };
                let (v7_latency, v7_bandwidth) = (v7_threads(1), v7_threads(UNROLL as usize));
                if v7_latency != v7_bandwidth {
                    let a = row_sum_model(&row, v7_latency, v7_latency);
                    let b = row_sum_model(&row, v7_bandwidth, v7_bandwidth);
                    v7_cases += 1;
                    v7_differs += usize::from(a.to_bits() != b.to_bits());
                }
            }
        }
        assert!(
            v7_differs * 4 > v7_cases,
            "the v7 geometries differed on {v7_differs} of {v7_cases} rows only"
        );
    }

    /// A zero is divided as a quarter of its block's divisor (`divide_value`): the quotient
    /// must round to `q = 0` for every divisor the kernels divide by, which is `amax / 127` or 1
    /// (non-negative, NaN or infinite): every subnormal divisor, where `div * 0.25` rounds, and
    /// a spread of mantissas in every binade. A quotient below 0.5 rounds half away to 0, and
    /// `cvt.rzi.s32.f32` turns NaN into 0.
    #[test]
    fn a_zero_divided_as_a_quarter_of_the_divisor_quantizes_to_zero() {
        let subnormal = 0..1u32 << 23;
        let binades =
            (1..=255u32).flat_map(|e| (0..1u32 << 23).step_by(997).map(move |m| e << 23 | m));
        for bits in subnormal.chain(binades) {
            let div = f32::from_bits(bits);
            let quotient = div * 0.25 / div;
            assert!(
                quotient.is_nan() || quotient.abs() < 0.5,
                "div {div:e} ({bits:#x}): zero_num / div = {quotient}"
            );
        }
    }

    /// Where `nearest_clear` calls a product clear of rounding ties, its integer is the
    /// division's `round_half_away(x / div)` (module docs): blocks with `amax` over the whole
    /// range whose `div` is normal, values spread over `[-amax, amax]`, and values placed within
    /// a few ulps of every tie `(k + 0.5) * div`. It must also call most spread values clear (or
    /// the kernels would divide them), and no value next to a tie.
    #[test]
    fn products_clear_of_ties_round_as_the_quotients() {
        let mut state = 0x5EED_u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state
        };
        let (mut spread, mut spread_clear, mut near_clear) = (0u32, 0u32, 0u32);
        for _ in 0..4000 {
            let amax = f32::from_bits((next() >> 33) as u32 % 0x7F80_0000);
            let div = amax / 127.0;
            if !(f32::MIN_POSITIVE..=f32::MAX).contains(&div) {
                continue;
            }
            let r = 1.0 / div;
            let check = |x: f32| {
                let (k, clear) = nearest_clear(x, r);
                let q = (x / div).round();
                assert!(
                    !clear || k as f32 == q,
                    "amax {amax:e}, x {x:e}: product rounds to {k}, quotient to {q}"
                );
                clear
            };
            for _ in 0..64 {
                let u = (next() >> 40) as f32 / (1u64 << 24) as f32;
                spread += 1;
                spread_clear += u32::from(check(amax * (2.0 * u - 1.0)));
            }
            for k in -128..128 {
                let tie = (k as f32 + 0.5) * div;
                for ulps in -3i32..=3 {
                    let x = f32::from_bits(tie.to_bits().wrapping_add_signed(ulps));
                    if x.abs() <= amax {
                        near_clear += u32::from(check(x));
                    }
                }
            }
        }
        assert!(
            spread_clear as f32 > 0.999 * spread as f32,
            "{spread_clear} of {spread}"
        );
        assert_eq!(near_clear, 0, "values next to a tie called clear");
    }

    /// A subnormal divisor and its block's values scaled by `SUBNORMAL_SCALE` divide to the same
    /// bits as unscaled (`quantize_values`): every subnormal divisor the kernels can divide by
    /// (`amax / 127`), against values spread over `[-amax, amax]`, zeros' `zero_num` included.
    #[test]
    fn scaled_subnormal_divisions_give_the_same_quotients() {
        let mut state = 0x5CA1E_u64;
        for bits in (1..1u32 << 23).step_by(61) {
            let div = f32::from_bits(bits);
            let amax = div * 127.0;
            let zero_num = div * 0.25;
            let scaled = div * SUBNORMAL_SCALE;
            assert!(scaled.is_normal(), "div {div:e}");
            for _ in 0..8 {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let u = (state >> 40) as f32 / (1u64 << 24) as f32;
                let x = amax * (2.0 * u - 1.0);
                for num in [x, zero_num] {
                    let (a, b) = (num / div, num * SUBNORMAL_SCALE / scaled);
                    assert_eq!(
                        a.to_bits(),
                        b.to_bits(),
                        "div {div:e}, x {num:e}: {a} vs {b}"
                    );
                }
            }
        }
    }

    /// Every q8_1 block of a row is 8 consecutive lanes of one warp in one trip, in or past the
    /// row together, in both geometries (the 8-lane `amax` butterfly relies on it).
    #[test]
    fn q8_1_blocks_are_eight_lanes_of_one_warp_in_both_geometries() {
        for ncols in COLS.step_by(32) {
            let n4 = ncols / 4;
            for nrows in [1, BANDWIDTH_ROWS] {
                let b = row_block_dim(nrows, ncols);
                for m in 0..n4.div_ceil(b) {
                    for lanes in (0..b).step_by(8) {
                        let cols: Vec<u32> = (lanes..lanes + 8).map(|t| t + m * b).collect();
                        let live = cols.iter().filter(|&&c| c < n4).count();
                        assert!(live == 0 || live == 8, "ncols {ncols}, block {b}, m {m}");
                        assert!(
                            cols.iter().all(|c| c / 8 == cols[0] / 8) && lanes % 32 + 8 <= 32,
                            "ncols {ncols}, block {b}: {cols:?} is not one q8_1 block"
                        );
                    }
                }
            }
        }
    }
}
