//! q8_1 of a column group: its block's divisor, and each value's `q` through the reciprocal
//! where that decides the rounding, by division otherwise.
//!
//! The bits are those of `q = round_half_away(x / d)` (`norm_q8`'s docs), with few divisions.
//! Where `d` is normal (`amax >= 127 * 2^-126`), `y = x * rcp(d)` is within `2^-15` of the IEEE
//! quotient `x / d` (two roundings of relative error `2^-24` at `|x / d| <= 127 * (1 + 2^-23)`,
//! plus `2^-150` should `y` underflow); so where `y` is farther than [`TIE_MARGIN`] from every
//! tie `k + 0.5`, both round to `y`'s nearest integer, which is taken without dividing
//! ([`nearest_clear`]; `tests::products_clear_of_ties_round_as_the_quotients`). A value within
//! the margin is divided on its own, and every value of a block whose `d` is not normal is
//! divided. For a normal `d`, `|x / d|` rounds to at most 127; a subnormal one has fewer
//! significant bits, and from `amax` below about `2^-135` the quotient can pass 127.5
//! (`amax = 2^-140`: `d = 2^-147`, `amax / d = 128`), so `q` saturates.
//!
//! IEEE `div.rn.f32` takes its slow path for a zero or subnormal operand, and zeros are common
//! in activations. No zero is divided, and no select or branch follows a division (either would
//! keep the compilers from running a group's divisions straight through):
//!
//! - the block's divisor is `div = a / 127` with `a = amax`, or `a = 127` for an all-zero block,
//!   whose values are then divided by 1 and whose stored `d` is selected as 0;
//! - a zero `x` is divided as `div / 4` (`zero_num`), whose quotient rounds to `q = 0` for every
//!   divisor: 0.25 for a normal one, below 0.5 where `div / 4` rounds (subnormal `div`), NaN (so
//!   `q = 0`) where `div` is 0, infinite or NaN
//!   (`tests::a_zero_divided_as_a_quarter_of_the_divisor_quantizes_to_zero`);
//! - a subnormal `div` and its dividends are divided scaled by [`SUBNORMAL_SCALE`], which is exact
//!   and keeps every quotient (`tests::scaled_subnormal_divisions_give_the_same_quotients`).
//!
//! The reference .cu divides every value as it is, as llama.cpp does: there subnormal operands,
//! and the zeros of blocks whose `div / 4` is subnormal (`amax` below about `2^-117`), still take
//! the slow path; in the Rust build only a divided zero whose `zero_num` is 0, or subnormal in a
//! block with a normal `d`, does.

use super::*;

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
pub(super) fn nearest_clear(x: f32, rcp: f32) -> (i32, bool) {
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
pub(super) const SUBNORMAL_SCALE: f32 = 18_446_744_073_709_551_616.0;

/// The `q` of a column group's four values of a block divided by `div` (module docs): no
/// division where all four products are clear of ties, as nearly every group of ordinary data
/// is, and one division for each value that is not, so that a one-row launch waits for one
/// division rather than four (perf-notes, norm_q8: quantizing through the reciprocal).
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
pub(super) unsafe fn quantize_group(v: F32x4, qs: *mut I8x4, d: *mut f32, i4: u32) {
    quantize_group_amax(v, group8_max(lane_abs_max(v)), qs, d, i4);
}

/// The largest magnitude of one lane's four values (`fmaxf` of `fabsf`).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(super) fn lane_abs_max(v: F32x4) -> f32 {
    max(max(abs(v.x), abs(v.y)), max(abs(v.z), abs(v.w)))
}

/// [`quantize_group`] given its block's `amax`.
///
/// # Safety
/// As [`quantize_group`], but only this thread need call it.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(super) unsafe fn quantize_group_amax(v: F32x4, amax: f32, qs: *mut I8x4, d: *mut f32, i4: u32) {
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
