//! CPU references for the norm_q8 family.
//!
//! Two kinds: an f64 oracle for `z` (independent of the GPU's f32 arithmetic, so two identical
//! wrong answers from the two builds still fail), and the exact q8_1 definition applied to the
//! GPU's own `z` (quantization is exact given its input, so it is checked bit for bit). Both
//! follow the numerics that `kernels_gpu::norm_q8` documents, corner cases included.

/// The f64 RMS norm of each row, times `w`.
///
/// One f32 effect is part of the kernels' definition rather than an error, and is reproduced:
/// the sum of squares is accumulated in f32, so a row whose sum of squares exceeds `f32::MAX`
/// gets `rsqrt(inf) = 0` and `z = ±0` (NaN where `x` is infinite). A row whose sum lies within
/// a few ulps of `f32::MAX` may fall either way on the GPU; the generators of `inputs` keep
/// well away from it. With `eps = 0`, an all-zero row is NaN (`0 * rsqrt(0)`), as on the GPU.
pub fn rms_norm_f64(x: &[f32], w: &[f32], ncols: usize, eps: f32) -> Vec<f64> {
    let mut z = Vec::with_capacity(x.len());
    for row in x.chunks_exact(ncols) {
        let sum = row.iter().map(|&v| (v as f64) * (v as f64)).sum::<f64>();
        let scale = if sum > f32::MAX as f64 {
            0.0
        } else {
            1.0 / (sum / ncols as f64 + eps as f64).sqrt()
        };
        z.extend(
            row.iter()
                .zip(w)
                .map(|(&v, &g)| v as f64 * scale * g as f64),
        );
    }
    z
}

/// Relative tolerance of the GPU's f32 `z` against [`rms_norm_f64`]: the f32 sum of squares
/// (rounding ~ log2(ncols) * 2^-24 with a tree reduction), `rsqrt.approx.f32` (max relative
/// error 2^-22.9) and two roundings of the products stay well inside it. Subnormal results carry
/// an absolute precision instead; `compare::within_rel` allows for it.
pub const Z_REL_TOL: f64 = 4e-6;

/// The canonical NaN that every NaN-producing f32 instruction of the GPU returns (PTX does not
/// propagate NaN payloads): a block of NaNs has this `d`.
pub const GPU_NAN: u32 = 0x7FFF_FFFF;

/// The q8_1 planes of `z` by definition, in f32 as the kernels compute. Per block of 32 values:
///
/// - `amax = max |v|`, with `fmaxf`'s rule that a NaN loses to any number (so it is NaN only
///   when the whole block is), and `d = amax / 127` (the GPU's canonical NaN when NaN);
/// - `q = 0` where `v` is ±0, else `round_half_away(v / d)` saturated to `[-127, 127]`, and 0
///   where the quotient is NaN.
///
/// For a normal `d` the saturation changes nothing (`|v / d|` rounds to at most 127); a subnormal
/// `d` (`amax < 127 * 2^-126`) has few significant bits and can carry `|v / d|` to 128, and a `d`
/// that underflows to 0 makes every nonzero `v` ±127. Rust's `round` is half away from zero, and
/// its float-to-int `as` saturates and maps NaN to 0, as `cvt.rzi.s32.f32` does.
pub fn quantize_q8_1(z: &[f32]) -> (Vec<i8>, Vec<f32>) {
    let mut qs = Vec::with_capacity(z.len());
    let mut d = Vec::with_capacity(z.len() / 32);
    for block in z.as_chunks::<32>().0 {
        let amax = block
            .iter()
            .map(|v| v.abs())
            .reduce(f32::max)
            .expect("a block holds 32 values");
        let scale = match amax / 127.0 {
            s if s.is_nan() => f32::from_bits(GPU_NAN),
            s => s,
        };
        d.push(scale);
        qs.extend(block.iter().map(|&v| {
            if v == 0.0 {
                0
            } else {
                (v / scale).round().clamp(-127.0, 127.0) as i8
            }
        }));
    }
    (qs, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(values: &[(usize, f32)]) -> [f32; 32] {
        let mut z = [0.0f32; 32];
        for &(i, v) in values {
            z[i] = v;
        }
        z
    }

    /// `2^e`, exact down to the subnormals: `powi` of a negative exponent takes the reciprocal
    /// of `2^-e`, which overflows past 2^127 unless the optimizer folds it (a debug build gives 0).
    fn pow2(e: i32) -> f32 {
        assert!(
            (-149..=127).contains(&e),
            "2^{e} is not a finite nonzero f32"
        );
        if e >= -126 {
            f32::from_bits(((e + 127) as u32) << 23)
        } else {
            f32::from_bits(1 << (e + 149))
        }
    }

    #[test]
    fn rms_norm_of_a_constant_row_is_the_weight() {
        let z = rms_norm_f64(&[3.0; 64], &[0.5; 64], 32, 0.0);
        assert!(z.iter().all(|&v| (v - 0.5).abs() < 1e-12));
    }

    #[test]
    fn rms_norm_rows_are_independent() {
        let mut x = vec![1.0f32; 32];
        x.extend([2.0f32; 32]);
        let z = rms_norm_f64(&x, &[1.0; 32], 32, 0.0);
        assert!(z.iter().all(|&v| (v - 1.0).abs() < 1e-12));
    }

    #[test]
    fn a_row_whose_squares_overflow_f32_normalizes_to_zeros() {
        let mut x = vec![1e19f32; 32];
        x[3] = -1e19;
        let z = rms_norm_f64(&x, &[2.0; 32], 32, 1e-6);
        assert!(z.iter().all(|&v| v == 0.0), "{z:?}");
        // Just below: one value whose square is 1e38, the rest ones.
        let mut x = vec![1.0f32; 32];
        x[0] = 1e19;
        let z = rms_norm_f64(&x, &[1.0; 32], 32, 1e-6);
        assert!((z[0] - 32f64.sqrt()).abs() < 1e-9, "{}", z[0]);
    }

    #[test]
    fn an_all_zero_row_is_zero_with_eps_and_nan_without() {
        let z = rms_norm_f64(&[0.0; 32], &[1.0; 32], 32, 1e-6);
        assert!(z.iter().all(|&v| v == 0.0));
        assert!(rms_norm_f64(&[0.0; 32], &[1.0; 32], 32, 0.0)[0].is_nan());
    }

    #[test]
    fn quantize_rounds_half_away_and_keeps_the_extremes() {
        let z = block(&[
            (0, 127.0),
            (1, -127.0),
            (2, 2.5),
            (3, -2.5),
            (4, 0.49999997),
            (5, -0.5),
            (6, 126.5),
        ]);
        let (qs, d) = quantize_q8_1(&z);
        assert_eq!(d, vec![1.0]);
        assert_eq!(&qs[..8], &[127, -127, 3, -3, 0, -1, 127, 0]);
        // The same halves at d = 2^-20 and 2^100: scaling by a power of two keeps them exact.
        for e in [-20, 100] {
            let scaled = z.map(|v| v * pow2(e));
            let (qs_scaled, d) = quantize_q8_1(&scaled);
            assert_eq!(d, vec![pow2(e)]);
            assert_eq!(qs_scaled, qs);
        }
    }

    #[test]
    fn zero_blocks_and_signed_zeros_quantize_to_zero() {
        for z in [[0.0f32; 32], [-0.0; 32], block(&[(7, -0.0), (9, 0.0)])] {
            let (qs, d) = quantize_q8_1(&z);
            assert_eq!(d[0].to_bits(), 0, "d is +0");
            assert!(qs.iter().all(|&q| q == 0));
        }
    }

    #[test]
    fn a_single_nonzero_is_the_extreme_and_the_rest_zero() {
        for (i, v) in [(0, 1.5f32), (31, -3.25), (13, 1e-30), (20, -7e30)] {
            let mut z = [-0.0f32; 32];
            z[i] = v;
            let (qs, d) = quantize_q8_1(&z);
            assert_eq!(d[0], v.abs() / 127.0);
            for (j, &q) in qs.iter().enumerate() {
                assert_eq!(q, if j == i { 127 * v.signum() as i8 } else { 0 });
            }
        }
    }

    /// `amax = m * 2^-149` with `m = 127 k + 63`: `d` rounds down to `k` ulps, and `amax / d`
    /// reaches `127 + 63 / k`, which rounds to 128 or more for every `k <= 126`: an i8 wraps it
    /// to a negative value, the definition saturates it.
    #[test]
    fn a_subnormal_scale_saturates_instead_of_wrapping() {
        for k in [1u32, 2, 16, 64, 126] {
            let amax = f32::from_bits(127 * k + 63);
            let z = block(&[(0, amax), (1, -amax), (2, amax / 2.0)]);
            let (qs, d) = quantize_q8_1(&z);
            assert_eq!(d[0].to_bits(), k, "d is {k} ulps");
            let raw = (amax / d[0]).round();
            assert!(raw >= 128.0, "k {k}: {raw}");
            assert_eq!(&qs[..2], &[127, -127], "k {k}");
            assert!(qs[2] > 0);
        }
        // Wrapping needs `amax` below about 2^-135; k = 126 is just below.
        assert!(f32::from_bits(127 * 126 + 63) < pow2(-135));
    }

    #[test]
    fn pow2_is_exact_from_the_least_subnormal_to_the_largest_binade() {
        assert_eq!(pow2(-149), f32::from_bits(1));
        assert_eq!(pow2(-135), f32::from_bits(1 << 14));
        assert_eq!(pow2(-126), f32::MIN_POSITIVE);
        assert_eq!(pow2(0), 1.0);
        assert_eq!(pow2(127), f32::MAX / (2.0 - f32::EPSILON));
    }

    #[test]
    fn a_scale_that_underflows_to_zero_saturates_every_nonzero() {
        for amax in [f32::from_bits(1), f32::from_bits(63)] {
            let z = block(&[(0, amax), (5, -amax), (6, 0.0), (9, -f32::from_bits(1))]);
            let (qs, d) = quantize_q8_1(&z);
            assert_eq!(d[0].to_bits(), 0);
            assert_eq!((qs[0], qs[5], qs[6], qs[9]), (127, -127, 0, -127));
        }
    }

    #[test]
    fn huge_values_quantize_within_range() {
        let z = block(&[(0, f32::MAX), (1, -f32::MAX), (2, 1.0), (3, f32::MAX / 2.0)]);
        let (qs, d) = quantize_q8_1(&z);
        assert_eq!(d[0], f32::MAX / 127.0);
        assert_eq!(&qs[..3], &[127, -127, 0]);
        assert!((63..=64).contains(&qs[3]));
    }

    /// For every normal `d`, the saturation is a no-op: the quantization is llama.cpp's.
    #[test]
    fn saturation_changes_nothing_for_a_normal_scale() {
        let mut rng = crate::rng::SplitMix64::new(11);
        for e in [-110, -60, 0, 60, 120] {
            for _ in 0..200 {
                let z: Vec<f32> = (0..32).map(|_| rng.next_f32(1.0) * pow2(e)).collect();
                let (qs, d) = quantize_q8_1(&z);
                assert!(d[0].is_normal());
                for (&v, &q) in z.iter().zip(&qs) {
                    let raw = (v / d[0]).round();
                    assert!(raw.abs() <= 127.0 && raw as i8 == q, "{v} / {}", d[0]);
                }
            }
        }
    }

    #[test]
    fn nan_quantizes_to_zero_and_infinity_zeroes_its_block() {
        let (qs, d) = quantize_q8_1(&block(&[(0, f32::NAN), (1, 127.0), (2, -1.0)]));
        assert_eq!(d, vec![1.0], "a NaN does not count toward amax");
        assert_eq!(&qs[..3], &[0, 127, -1]);

        let (qs, d) = quantize_q8_1(&[f32::NAN; 32]);
        assert_eq!(d[0].to_bits(), GPU_NAN);
        assert!(qs.iter().all(|&q| q == 0));

        let (qs, d) = quantize_q8_1(&block(&[
            (0, f32::INFINITY),
            (1, -5.0),
            (2, f32::NEG_INFINITY),
        ]));
        assert_eq!(d[0], f32::INFINITY);
        assert!(qs.iter().all(|&q| q == 0), "{qs:?}");
    }
}
