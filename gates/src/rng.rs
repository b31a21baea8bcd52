//! Seeded inputs: the same seed gives the same bytes on every machine, so a failure can be
//! replayed exactly, and no input is ever zero (zeros hide unwritten outputs and skip branches).

/// SplitMix64: tiny, fast, and good enough to feed kernels.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[-scale, scale)` on a 2^-24 grid, never exactly zero.
    pub fn next_f32(&mut self, scale: f32) -> f32 {
        let unit = (self.next_u64() >> 40) as f32 / (1u32 << 24) as f32;
        let v = (unit - 0.5) * 2.0 * scale;
        if v == 0.0 {
            scale / (1u32 << 24) as f32
        } else {
            v
        }
    }
}

/// `n` values in `[-scale, scale)`, none zero.
pub fn vec_f32(seed: u64, n: usize, scale: f32) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    (0..n).map(|_| rng.next_f32(scale)).collect()
}

/// A per-case seed: the run's seed mixed with the case's identity, so every shape and input
/// gets its own stream and changing one case leaves the others' inputs alone.
pub fn case_seed(seed: u64, parts: &[u64]) -> u64 {
    parts.iter().fold(seed, |acc, &p| {
        SplitMix64::new(acc ^ p.wrapping_mul(0x2545_F491_4F6C_DD1D)).next_u64()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_values_different_seed_different_values() {
        assert_eq!(vec_f32(7, 1000, 4.0), vec_f32(7, 1000, 4.0));
        assert_ne!(vec_f32(7, 1000, 4.0), vec_f32(8, 1000, 4.0));
    }

    #[test]
    fn values_are_in_range_and_never_zero() {
        let v = vec_f32(1, 100_000, 4.0);
        assert!(v.iter().all(|&x| x != 0.0 && (-4.0..4.0).contains(&x)));
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
        assert!(mean.abs() < 0.05, "mean {mean}");
    }

    #[test]
    fn case_seeds_differ_per_case() {
        let a = case_seed(1, &[1, 4096]);
        let b = case_seed(1, &[1, 8192]);
        let c = case_seed(2, &[1, 4096]);
        assert!(a != b && a != c && b != c);
        assert_eq!(a, case_seed(1, &[1, 4096]));
    }
}
