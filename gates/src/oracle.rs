//! CPU references for the norm_q8 family.
//!
//! Two kinds: an f64 oracle for `z` (independent of the GPU's f32 arithmetic, so two identical
//! wrong answers from the two builds still fail), and the exact q8_1 definition applied to the
//! GPU's own `z` (quantization is exact given its input, so it is checked bit for bit).

/// The f64 RMS norm of each row, times `w`.
pub fn rms_norm_f64(x: &[f32], w: &[f32], ncols: usize, eps: f32) -> Vec<f64> {
    let mut z = Vec::with_capacity(x.len());
    for row in x.chunks_exact(ncols) {
        let mean = row.iter().map(|&v| (v as f64) * (v as f64)).sum::<f64>() / ncols as f64;
        let scale = 1.0 / (mean + eps as f64).sqrt();
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
/// error 2^-22.9) and two roundings of the products stay well inside it.
pub const Z_REL_TOL: f64 = 4e-6;

/// The q8_1 planes of `z` by definition: per 32 values `d = amax / 127` and
/// `q = round_half_away(v / d)` (0 where `amax` is 0), all in f32 as the kernels compute.
pub fn quantize_q8_1(z: &[f32]) -> (Vec<i8>, Vec<f32>) {
    let mut qs = Vec::with_capacity(z.len());
    let mut d = Vec::with_capacity(z.len() / 32);
    for block in z.chunks_exact(32) {
        let amax = block.iter().fold(0.0f32, |m, &v| m.max(v.abs()));
        let scale = amax / 127.0;
        d.push(scale);
        qs.extend(block.iter().map(|&v| {
            if amax == 0.0 {
                0
            } else {
                (v / scale).round() as i8
            }
        }));
    }
    (qs, d)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn quantize_rounds_half_away_and_keeps_the_extremes() {
        let mut z = [0.0f32; 32];
        z[0] = 127.0;
        z[1] = -127.0;
        z[2] = 2.5;
        z[3] = -2.5;
        z[4] = 0.49999997;
        let (qs, d) = quantize_q8_1(&z);
        assert_eq!(d, vec![1.0]);
        assert_eq!(&qs[..6], &[127, -127, 3, -3, 0, 0]);
    }

    #[test]
    fn an_all_zero_block_quantizes_to_zero() {
        let (qs, d) = quantize_q8_1(&[0.0; 32]);
        assert_eq!(d, vec![0.0]);
        assert!(qs.iter().all(|&q| q == 0));
    }
}
