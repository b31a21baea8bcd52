use super::quantize::{nearest_clear, SUBNORMAL_SCALE};
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

/// The claim of `rms`'s docs, checked: both launch geometries perform the same operations in
/// the same order, so every row sums to the same bits in either; and the model is fine
/// enough to tell orders apart: a reduction over the real threads (one partial sum each, so
/// that `P` is the block size, as the kernels once summed) sums a good share of rows (over a
/// quarter) to other bits in its two geometries where their block sizes differ.
#[test]
fn both_geometries_sum_in_the_same_order() {
    let (mut real_cases, mut real_differs) = (0, 0);
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

            let real_threads = |groups_per_thread: usize| {
                ((ncols as usize / 4)
                    .div_ceil(groups_per_thread)
                    .div_ceil(32)
                    * 32)
                    .min(1024)
            };
            let (real_latency, real_bandwidth) = (real_threads(1), real_threads(UNROLL as usize));
            if real_latency != real_bandwidth {
                let a = row_sum_model(&row, real_latency, real_latency);
                let b = row_sum_model(&row, real_bandwidth, real_bandwidth);
                real_cases += 1;
                real_differs += usize::from(a.to_bits() != b.to_bits());
            }
        }
    }
    assert!(
        real_differs * 4 > real_cases,
        "the real-thread geometries differed on {real_differs} of {real_cases} rows only"
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
    let binades = (1..=255u32).flat_map(|e| (0..1u32 << 23).step_by(997).map(move |m| e << 23 | m));
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
/// division's `round_half_away(x / div)` (`quantize`'s docs): blocks with `amax` over the whole
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
