//! Comparisons that report where they fail: the first mismatching index and both values.

/// Values compared by their bits (so NaN payloads and signed zeros count).
pub trait Bits: Copy + std::fmt::Debug {
    fn bits(self) -> u64;
}

impl Bits for f32 {
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
}

impl Bits for i8 {
    fn bits(self) -> u64 {
        u64::from(self as u8)
    }
}

/// The outcome of one check: `None` when it holds, else what failed.
pub type Verdict = Option<String>;

/// Byte identity of two arrays.
pub fn identical<T: Bits>(a: &[T], b: &[T]) -> Verdict {
    if a.len() != b.len() {
        return Some(format!("lengths differ: {} vs {}", a.len(), b.len()));
    }
    let diffs = a
        .iter()
        .zip(b)
        .filter(|(x, y)| x.bits() != y.bits())
        .count();
    let (i, (x, y)) = a
        .iter()
        .zip(b)
        .enumerate()
        .find(|(_, (x, y))| x.bits() != y.bits())?;
    Some(format!(
        "{diffs} of {} differ; first at [{i}]: {x:?} (0x{:x}) vs {y:?} (0x{:x})",
        a.len(),
        x.bits(),
        y.bits()
    ))
}

/// Absolute error that [`within_rel`] forgives on top of the relative one: below 2^-126 an f32
/// has a fixed spacing of 2^-149 rather than a relative precision, and a few roundings there
/// (multiplied by later factors such as a norm's weight) reach a few times that. Negligible for
/// any normal result.
pub const F32_SUBNORMAL_SLACK: f64 = f64::from_bits((1023 - 144) << 52);

/// Every element of `got` is within `rel * |want| + `[`F32_SUBNORMAL_SLACK`] of `want` (NaN
/// never passes). Also returns the worst relative error beyond that slack.
pub fn within_rel(got: &[f32], want: &[f64], rel: f64) -> (Verdict, f64) {
    let mut worst = 0.0f64;
    let mut first = None;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        // Negative within the slack; NaN when either side is.
        let beyond = (g as f64 - w).abs() - F32_SUBNORMAL_SLACK;
        let err = beyond / w.abs().max(f64::MIN_POSITIVE);
        if err.is_nan() || err > rel {
            first.get_or_insert_with(|| format!("first at [{i}]: got {g:e}, want {w:e}"));
        }
        if err.is_nan() {
            worst = f64::INFINITY;
        } else {
            worst = worst.max(err);
        }
    }
    if got.len() != want.len() {
        first = Some(format!("lengths differ: {} vs {}", got.len(), want.len()));
    }
    (
        first.map(|f| format!("max rel err {worst:.2e} > {rel:.0e}; {f}")),
        worst,
    )
}

/// Every element of `got` is within `bound(i) * scale[i]` of `want` (NaN never passes), where
/// `scale` is the magnitude the rounding error of element `i` grows with (for a dot product,
/// `sum |a b|`); a zero scale demands an exact result. Returns the verdict and the largest
/// `|got - want| / scale`.
pub fn within_scaled(
    got: &[f32],
    want: &[f64],
    scale: &[f64],
    bound: impl Fn(usize) -> f64,
) -> (Verdict, f64) {
    let mut worst = 0.0f64;
    let mut first = None;
    for (i, ((&g, &w), &m)) in got.iter().zip(want).zip(scale).enumerate() {
        let err = (f64::from(g) - w).abs();
        let rel = if m > 0.0 {
            err / m
        } else if err == 0.0 {
            0.0
        } else {
            f64::INFINITY
        };
        if rel.is_nan() || rel > bound(i) {
            first.get_or_insert_with(|| {
                format!(
                    "first at [{i}]: got {g:e}, want {w:e}, bound {:.1e} x {m:.3e}",
                    bound(i)
                )
            });
        }
        worst = if rel.is_nan() {
            f64::INFINITY
        } else {
            worst.max(rel)
        };
    }
    if got.len() != want.len() {
        first = Some(format!("lengths differ: {} vs {}", got.len(), want.len()));
    }
    (
        first.map(|f| format!("max err {worst:.2e} x scale; {f}")),
        worst,
    )
}

/// The geometric mean (1 for no values).
pub fn geomean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x.ln(), n + 1));
    (s / n.max(1) as f64).exp()
}

/// No element still holds the poison pattern the buffer was filled with before the launch.
pub fn all_written<T: Bits>(got: &[T], poison: T) -> Verdict {
    let left = got.iter().filter(|v| v.bits() == poison.bits()).count();
    let i = got.iter().position(|v| v.bits() == poison.bits())?;
    Some(format!(
        "{left} of {} elements never written; first at [{i}]",
        got.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_compares_bits_not_values() {
        assert!(identical(&[1.0f32, 2.0], &[1.0, 2.0]).is_none());
        let v = identical(&[0.0f32], &[-0.0]).unwrap();
        assert!(v.contains("first at [0]"), "{v}");
        assert!(identical(&[f32::NAN], &[f32::NAN]).is_none());
        let v = identical(&[1i8, 2, 3], &[1, 5, 6]).unwrap();
        assert!(v.starts_with("2 of 3 differ; first at [1]"), "{v}");
    }

    #[test]
    fn within_rel_fails_on_nan_and_large_errors() {
        assert!(within_rel(&[1.0], &[1.0 + 1e-7], 1e-6).0.is_none());
        assert!(within_rel(&[1.0], &[1.1], 1e-6).0.is_some());
        assert!(within_rel(&[f32::NAN], &[1.0], 1e-6).0.is_some());
        assert!(within_rel(&[f32::INFINITY], &[1.0], 1e-6).0.is_some());
    }

    /// A subnormal result one spacing off is as close as f32 gets; a normal one is not forgiven
    /// anything measurable.
    #[test]
    fn within_rel_allows_subnormal_spacing_only() {
        let ulp = f32::from_bits(1) as f64;
        assert_eq!(F32_SUBNORMAL_SLACK, 2f64.powi(-144));
        let tiny = f32::from_bits(100);
        assert!(within_rel(&[tiny], &[tiny as f64 + 3.0 * ulp], 1e-6)
            .0
            .is_none());
        assert!(within_rel(&[tiny], &[tiny as f64 + 1e-40], 1e-6)
            .0
            .is_some());
        assert!(within_rel(&[0.0], &[0.0], 1e-6).0.is_none());
        let normal = 2f32.powi(-100);
        assert!(within_rel(&[normal], &[normal as f64 * (1.0 + 1e-5)], 1e-6)
            .0
            .is_some());
    }

    #[test]
    fn scaled_bounds_follow_the_magnitude_and_demand_exact_zeros() {
        assert!(within_scaled(&[1.0], &[1.0 + 1e-9], &[10.0], |_| 1e-6)
            .0
            .is_none());
        assert!(within_scaled(&[1.0], &[1.1], &[10.0], |_| 1e-6).0.is_some());
        assert!(within_scaled(&[0.0], &[0.0], &[0.0], |_| 1e-6).0.is_none());
        assert!(within_scaled(&[1e-30], &[0.0], &[0.0], |_| 1e-6)
            .0
            .is_some());
        assert!(within_scaled(&[f32::NAN], &[0.0], &[1.0], |_| 1e-6)
            .0
            .is_some());
        assert!(within_scaled(&[1.0], &[1.0, 2.0], &[1.0, 1.0], |_| 1e-6)
            .0
            .is_some());
        assert!((geomean([2.0, 8.0].into_iter()) - 4.0).abs() < 1e-12);
    }

    #[test]
    fn all_written_finds_poison() {
        assert!(all_written(&[1i8, 2], -128).is_none());
        let v = all_written(&[1i8, -128, -128], -128).unwrap();
        assert!(v.starts_with("2 of 3"), "{v}");
    }
}
